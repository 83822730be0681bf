/**
 * What an edit tool would make of a file, computed the way the server's tool
 * previews do (agent_host/session/tools/previews.py): for the side-by-side diff
 * the permission prompt shows when the server sent no `proposed` text (a server
 * older than that field). No `vscode` import here.
 */

/** Python's `str.replace(old, new, count)` (count -1: all), without JS's `$` patterns. */
export function pyReplace(text: string, old: string, replacement: string, count = -1): string {
    if (old === '') {
        // Python inserts the replacement between every character (and at both ends)
        const slots = text.length + 1;
        const n = count < 0 ? slots : Math.min(count, slots);
        let out = '';
        for (let i = 0; i < text.length + 1; i++) {
            out += (i < n ? replacement : '') + (i < text.length ? text[i] : '');
        }
        return out;
    }
    let out = '';
    let at = 0;
    let done = 0;
    while (count < 0 || done < count) {
        const found = text.indexOf(old, at);
        if (found < 0) {
            break;
        }
        out += text.slice(at, found) + replacement;
        at = found + old.length;
        done++;
    }
    return out + text.slice(at);
}

/**
 * The content `tool` with `args` would leave in a file whose content is now
 * `current` (undefined: the file does not exist). Undefined when the tool is
 * not a file edit or its arguments do not fit.
 */
export function proposedContent(
    tool: string,
    args: Record<string, unknown>,
    current: string | undefined,
): string | undefined {
    const old = current ?? '';
    switch (tool) {
        case 'write_file':
            return typeof args.content === 'string' ? args.content : undefined;
        case 'edit_file': {
            if (typeof args.old_string !== 'string') {
                return undefined;
            }
            const replacement = args.new_string === undefined || args.new_string === null ? '' : String(args.new_string);
            return pyReplace(old, args.old_string, replacement, args.replace_all ? -1 : 1);
        }
        case 'delete_file':
            return '';
        default:
            return undefined;
    }
}

/** The `path` argument of a file tool, if any. */
export function toolPath(args: Record<string, unknown>): string | undefined {
    return typeof args.path === 'string' && args.path ? args.path : undefined;
}
