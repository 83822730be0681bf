/**
 * The diff views of reviews and previews: many files in VS Code's multi-file
 * changes editor (`vscode.changes`), one file in a diff editor (`vscode.diff`),
 * and a conflict (the agent's last text against the file on disk: what a
 * restore or an undo would discard). Texts are served by ReviewDocuments.
 */

import * as path from 'node:path';
import * as vscode from 'vscode';
import { diffSides } from '../protocol/reviewText';
import type { FileDiff } from '../protocol/types';
import { resolveToolPath } from './permission';
import type { ReviewDocuments } from './reviewDocuments';

/** The workspace file a path names (the changes editor's label for it). */
function fileUri(p: string): vscode.Uri {
    return resolveToolPath(p) ?? vscode.Uri.file(p);
}

/** All `files` in the changes editor, titled `title`. */
export async function showChanges(docs: ReviewDocuments, files: readonly FileDiff[], title: string): Promise<void> {
    const add = docs.begin();
    const resources = files.map((f) => {
        const sides = diffSides(f);
        return [
            fileUri(f.path),
            sides.before === undefined ? undefined : add('before', f.oldPath ?? f.path, sides.before),
            sides.after === undefined ? undefined : add('after', f.path, sides.after),
        ];
    });
    await vscode.commands.executeCommand('vscode.changes', title, resources);
}

/** One file's diff in a diff editor (an absent side is empty). */
export async function showFileDiff(
    docs: ReviewDocuments,
    f: FileDiff,
    title: string,
    options: vscode.TextDocumentShowOptions = {},
): Promise<void> {
    const add = docs.begin();
    const sides = diffSides(f);
    await vscode.commands.executeCommand(
        'vscode.diff',
        add('before', f.oldPath ?? f.path, sides.before ?? ''),
        add('after', f.path, sides.after ?? ''),
        title,
        options,
    );
}

/** The agent's last text of `p` against the file on disk: the user's change, which
 * would be discarded. */
export async function showConflict(
    docs: ReviewDocuments,
    p: string,
    agentText: string,
    title: string,
    options: vscode.TextDocumentShowOptions = {},
): Promise<void> {
    const add = docs.begin();
    await vscode.commands.executeCommand('vscode.diff', add('agent', p, agentText), fileUri(p), title, options);
}

export function baseName(p: string): string {
    return path.posix.basename(p);
}
