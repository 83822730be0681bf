/**
 * What the review and the restore preview say about a file, and which sides
 * its diff has: plain text and plain data (no `vscode` import), so the unit
 * tests check it without an editor.
 */

import type { FileDiff, PreviewFile, RestorePreview } from './types';

/** `+3 −1`, or `binary`. */
export function countsText(f: Pick<FileDiff, 'binary' | 'added' | 'removed'>): string {
    return f.binary ? 'binary' : `+${f.added} −${f.removed}`;
}

/** What happened to a file in a turn (or a range of turns). */
export function changeText(f: Pick<FileDiff, 'action' | 'oldPath'>): string {
    return f.action === 'renamed' && f.oldPath ? `renamed from ${f.oldPath}` : f.action;
}

/** What a restore would do to a file. */
export function restoreActionText(f: Pick<FileDiff, 'action' | 'oldPath'>): string {
    switch (f.action) {
        case 'added':
            return 'will be created';
        case 'deleted':
            return 'will be deleted';
        case 'renamed':
            return f.oldPath ? `will be renamed from ${f.oldPath}` : 'will be renamed';
        default:
            return 'will be changed';
    }
}

/** The codicon of an action. */
export function actionIcon(action: FileDiff['action']): string {
    return { added: 'diff-added', deleted: 'diff-removed', renamed: 'diff-renamed', modified: 'diff-modified' }[action] ?? 'diff-modified';
}

export interface PreviewRow {
    path: string;
    label: string;
    description: string;
    detail?: string;
    /** Ticked at first: everything but conflicts (ticking one discards the user's change). */
    picked: boolean;
    conflict: boolean;
}

/** One row of the restore quick pick per file. */
export function previewRows(preview: RestorePreview): PreviewRow[] {
    return preview.files.map((f: PreviewFile) => ({
        path: f.path,
        label: `$(${f.conflict ? 'warning' : actionIcon(f.action)}) ${f.path}`,
        description: `${restoreActionText(f)} · ${countsText(f)}`,
        ...(f.conflict
            ? { detail: 'Conflict: you changed it since the agent did. Ticked, your change is lost (Compare).' }
            : {}),
        picked: !f.conflict,
        conflict: Boolean(f.conflict),
    }));
}

/** `2 files · 4 messages removed`: the preview's title line. */
export function previewSummary(preview: RestorePreview): string {
    const files = preview.files.length;
    const conflicts = preview.files.filter((f) => f.conflict).length;
    const parts = [files === 1 ? '1 file' : `${files} files`];
    if (conflicts) {
        parts.push(conflicts === 1 ? '1 conflict' : `${conflicts} conflicts`);
    }
    parts.push(preview.messagesRemoved === 1 ? '1 message removed' : `${preview.messagesRemoved} messages removed`);
    return parts.join(' · ');
}

/** What to restore once the user has chosen: the ticked paths, and `force` when a ticked one is a conflict. */
export function restoreChoice(preview: RestorePreview, ticked: readonly string[]): { paths: string[]; force: boolean } {
    const chosen = new Set(ticked);
    const files = preview.files.filter((f) => chosen.has(f.path));
    return { paths: files.map((f) => f.path), force: files.some((f) => f.conflict) };
}

/** The text shown for a side that has none (binary or too large); undefined: the file is absent on that side. */
export interface DiffSides {
    before: string | undefined;
    after: string | undefined;
}

const UNSHOWN = (f: FileDiff) =>
    f.binary ? '(binary file: not shown)' : '(not shown: the file is over 1 MiB)';

/** The two texts of a file's diff; an absent file (added: before, deleted: after) has none. */
export function diffSides(f: FileDiff): DiffSides {
    const side = (text: string | null | undefined, absent: boolean) =>
        absent ? undefined : typeof text === 'string' ? text : UNSHOWN(f);
    return { before: side(f.before, f.action === 'added'), after: side(f.after, f.action === 'deleted') };
}

/** The changes editor's title: `Agent Host: turn 3 · add a test` (VS Code adds the file count). */
export function reviewTitle(what: string): string {
    return `Agent Host: ${what}`;
}

