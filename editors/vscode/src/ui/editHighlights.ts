/**
 * The lines an agent's edit wrote, highlighted for a few seconds in every editor
 * showing the document (and in one shown meanwhile), so an open file does not
 * change silently. The highlight goes when the time is up or the user types.
 */

import * as vscode from 'vscode';
import { changedLines } from '../protocol/lineDiff';
import { onAgentEdit, type AgentEdit } from './agentEdits';

/** How long the lines stay highlighted. */
export const HIGHLIGHT_MS = 5000;

interface Flash {
    ranges: vscode.Range[];
    timer: NodeJS.Timeout;
}

export class EditHighlights implements vscode.Disposable {
    private readonly decoration = vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
        overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
        overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    private readonly flashes = new Map<string, Flash>();
    private readonly disposables: vscode.Disposable[];

    constructor(
        private readonly log: (line: string) => void,
        private readonly ms = HIGHLIGHT_MS,
    ) {
        this.disposables = [
            this.decoration,
            onAgentEdit((edit) => this.flash(edit)),
            vscode.window.onDidChangeVisibleTextEditors((editors) => {
                for (const editor of editors) {
                    const flash = this.flashes.get(editor.document.uri.toString());
                    if (flash) {
                        editor.setDecorations(this.decoration, flash.ranges);
                    }
                }
            }),
            vscode.workspace.onDidChangeTextDocument((e) => {
                // the user types: the highlight would mark the wrong lines
                if (e.contentChanges.length && this.flashes.has(e.document.uri.toString())) {
                    this.log(`highlight of ${e.document.uri.fsPath} cleared: the text changed`);
                    this.clear(e.document.uri.toString());
                }
            }),
        ];
    }

    dispose(): void {
        for (const key of [...this.flashes.keys()]) {
            this.clear(key);
        }
        for (const d of this.disposables) {
            d.dispose();
        }
    }

    private flash(edit: AgentEdit): void {
        const key = edit.document.uri.toString();
        this.clear(key);
        const spans = changedLines(edit.before, edit.document.getText());
        if (!spans.length) {
            return;
        }
        const ranges = spans.map((s) => new vscode.Range(s.start, 0, Math.max(s.start, s.end - 1), 0));
        this.flashes.set(key, { ranges, timer: setTimeout(() => this.clear(key), this.ms) });
        this.log(`highlight of ${edit.document.uri.fsPath}: lines ${spans.map((s) => `${s.start + 1}-${s.end}`).join(', ')}`);
        for (const editor of vscode.window.visibleTextEditors) {
            if (editor.document.uri.toString() === key) {
                editor.setDecorations(this.decoration, ranges);
            }
        }
    }

    private clear(key: string): void {
        const flash = this.flashes.get(key);
        if (!flash) {
            return;
        }
        clearTimeout(flash.timer);
        this.flashes.delete(key);
        for (const editor of vscode.window.visibleTextEditors) {
            if (editor.document.uri.toString() === key) {
                editor.setDecorations(this.decoration, []);
            }
        }
    }
}
