/**
 * File mentions in a prompt: `@path`, `#path`, `#file:path` (as Copilot writes
 * it) name a workspace file whose text goes along as context. A word after `@` or
 * `#` that is no file (`@someone`, `#3`) is left as text.
 *
 * No `vscode` import here.
 */

const MENTION = /(^|[\s(])[@#](?:file:)?([^\s@#`'"(),;]+)/g;

/** The paths mentioned in `prompt`, in order, each once, trailing punctuation dropped. */
export function mentionedPaths(prompt: string): string[] {
    const found: string[] = [];
    for (const m of prompt.matchAll(MENTION)) {
        const path = m[2].replace(/[.:!?]+$/, '');
        if (path && !found.includes(path)) {
            found.push(path);
        }
    }
    return found;
}
