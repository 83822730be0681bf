/**
 * `@file` / `#file` mentions: the quick pick of workspace files the chat's prompt
 * box opens when `@` or `#` is typed, and the mentioned files' text attached to
 * the prompt as context (the open buffer's text if the file is open).
 */

import * as path from 'node:path';
import * as vscode from 'vscode';
import { mentionedPaths } from '../protocol/mentions';
import type { ContextItem } from '../protocol/types';

/** A mentioned file larger than this is named, not attached. */
const MAX_ATTACHED = 256 * 1024;
const EXCLUDE = '**/{node_modules,.git,.venv,__pycache__,dist,out}/**';

/** A workspace file picked from a quick pick, as a `/`-separated relative path. */
export async function pickMentionedFile(trigger: string): Promise<string | undefined> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
        return undefined;
    }
    const files = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, '**/*'), EXCLUDE, 5000);
    const items = files
        .map((uri) => path.relative(folder.uri.fsPath, uri.fsPath).split(path.sep).join('/'))
        .sort()
        .map((rel) => ({ label: path.posix.basename(rel), description: path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel), rel }));
    const picked = await vscode.window.showQuickPick(items, {
        title: `Agent Host: Mention a File (${trigger})`,
        placeHolder: 'A file whose text goes with the prompt',
        matchOnDescription: true,
    });
    return picked?.rel;
}

/** The files `prompt` mentions that exist in the workspace, as context items. */
export async function mentionContext(prompt: string, log: (line: string) => void): Promise<ContextItem[]> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
        return [];
    }
    const items: ContextItem[] = [];
    for (const rel of mentionedPaths(prompt)) {
        const file = path.resolve(folder.uri.fsPath, rel);
        if (file !== folder.uri.fsPath && !file.startsWith(folder.uri.fsPath + path.sep)) {
            continue; // outside the workspace: not attached
        }
        const uri = vscode.Uri.file(file);
        let stat: vscode.FileStat;
        try {
            stat = await vscode.workspace.fs.stat(uri);
        } catch {
            continue; // no such file: a plain word
        }
        if (stat.type !== vscode.FileType.File) {
            continue;
        }
        if (stat.size > MAX_ATTACHED) {
            log(`@${rel} not attached: ${stat.size} bytes (over ${MAX_ATTACHED})`);
            continue;
        }
        const doc = await vscode.workspace.openTextDocument(uri);
        items.push({ text: doc.getText(), uri: uri.toString() });
    }
    return items;
}
