/**
 * The server's `workspace/applyEdit`, answered the way VS Code's own refactorings
 * leave a document: the server has already written the file (the disk is the
 * truth for its tools), so once the edit is applied the document equals the disk
 * and is made clean again by a revert (which reloads the same text and takes the
 * file's new modification time, so the next save is no conflict). One Undo takes
 * the edit back (the document is then dirty, as after any undo) and Save writes.
 *
 * A restore that brings back unsaved text sends text that differs from the disk:
 * the document is first reverted to the restored file, then given that text, so
 * it is dirty with it and saving it is no conflict either.
 *
 * VS Code reverts only the active editor, so a document shown elsewhere is made
 * active for the revert and the editor that was active is shown again after it.
 *
 * Each document the edit changed is announced (onAgentEdit) with its text before,
 * for the brief highlight of the changed lines (editHighlights).
 */

import * as vscode from 'vscode';
import { applyTextEdits, type ApplyWorkspaceEditParams, type ApplyWorkspaceEditResult, type TextEdit } from '../protocol/edits';

/** A document an agent edit changed, and its text before. */
export interface AgentEdit {
    document: vscode.TextDocument;
    before: string;
}

const edited = new vscode.EventEmitter<AgentEdit>();

/** Fires once per document an applied `workspace/applyEdit` changed. */
export const onAgentEdit = edited.event;

export async function applyAgentEdit(
    params: ApplyWorkspaceEditParams,
    log: (line: string) => void,
): Promise<ApplyWorkspaceEditResult> {
    const perUri = new Map<string, TextEdit[]>();
    for (const [uri, edits] of Object.entries(params.edit.changes ?? {})) {
        perUri.set(uri, [...(perUri.get(uri) ?? []), ...edits]);
    }
    for (const change of params.edit.documentChanges ?? []) {
        if (!('textDocument' in change)) {
            return { applied: false, failureReason: `resource operation ${change.kind} is not supported` };
        }
        perUri.set(change.textDocument.uri, [...(perUri.get(change.textDocument.uri) ?? []), ...change.edits]);
    }
    for (const [uri, edits] of perUri) {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
        let target: string;
        try {
            target = applyTextEdits(doc.getText(), edits);
        } catch (err) {
            return { applied: false, failureReason: String(err) };
        }
        const before = doc.getText();
        const failure = await bringTo(doc, target, params.label, log);
        if (failure) {
            return { applied: false, failureReason: failure };
        }
        if (doc.getText() !== before) {
            edited.fire({ document: doc, before });
        }
    }
    return { applied: true };
}

/** The document's text becomes `target`: clean when that is the file on disk. */
async function bringTo(doc: vscode.TextDocument, target: string, label: string | undefined, log: (line: string) => void): Promise<string | undefined> {
    const disk = doc.uri.scheme === 'file' ? await diskText(doc.uri) : undefined;
    if (disk !== undefined && target !== disk && (doc.isDirty || doc.getText() !== disk)) {
        // a restore with unsaved text: the file first, so the text is dirty on top of it
        await revert(doc, log);
    }
    if (doc.getText() !== target) {
        const edit = new vscode.WorkspaceEdit();
        edit.replace(doc.uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), target);
        if (!(await vscode.workspace.applyEdit(edit))) {
            return `VS Code did not apply the edit${label ? ` (${label})` : ''}`;
        }
    }
    if (disk !== undefined && target === disk && doc.isDirty) {
        await revert(doc, log);
    }
    return undefined;
}

async function diskText(uri: vscode.Uri): Promise<string | undefined> {
    try {
        return new TextDecoder('utf-8', { fatal: true }).decode(await vscode.workspace.fs.readFile(uri));
    } catch {
        return undefined; // absent, or not UTF-8: nothing to match
    }
}

async function revert(doc: vscode.TextDocument, log: (line: string) => void): Promise<void> {
    const before = vscode.window.activeTextEditor;
    const shown = vscode.window.visibleTextEditors.find((e) => e.document === doc);
    try {
        if (before?.document !== doc) {
            await vscode.window.showTextDocument(doc, { viewColumn: shown?.viewColumn, preserveFocus: false, preview: !shown });
        }
        await vscode.commands.executeCommand('workbench.action.files.revert');
    } catch (err) {
        log(`could not revert ${doc.uri.fsPath} after the agent's edit: ${String(err)}`);
    } finally {
        if (before && before.document !== doc) {
            await vscode.window.showTextDocument(before.document, { viewColumn: before.viewColumn, preserveFocus: false });
        }
    }
}
