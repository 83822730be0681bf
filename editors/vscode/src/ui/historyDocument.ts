/** The read-only Markdown documents Show History opens (agent-host-history:/ID.md). */

import * as vscode from 'vscode';

export const HISTORY_SCHEME = 'agent-host-history';

export class HistoryContentProvider implements vscode.TextDocumentContentProvider {
    private readonly docs = new Map<string, string>();
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;

    set(uri: vscode.Uri, text: string): void {
        this.docs.set(uri.toString(), text);
        this.changed.fire(uri);
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.docs.get(uri.toString()) ?? '';
    }
}
