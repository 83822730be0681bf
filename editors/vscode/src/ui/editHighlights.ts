/**
 * The lines an agent's edit wrote, highlighted for a few seconds in every editor
 * showing the document (and in one shown meanwhile), so an open file does not
 * change silently. The highlight goes when the time is up or the user types.
 *
 * Two ways an agent's change reaches an open document: the server's
 * workspace/applyEdit (onAgentEdit, with the text before), or the disk, which
 * VS Code reloads the document from (a command's change, or a write made before
 * the server knew the document was open): a turn's file_snapshot of an open
 * document arms a watch, and the document's next change within a few seconds is
 * highlighted against its text when the snapshot came.
 */

import * as vscode from 'vscode';
import { changedLines } from '../protocol/lineDiff';
import type { SessionEvent } from '../protocol/types';
import { onAgentEdit, type AgentEdit } from './agentEdits';
import { resolveToolPath } from './permission';

/** How long the lines stay highlighted. */
export const HIGHLIGHT_MS = 5000;
/** How long a snapshot's document is watched for the reload from the disk. */
const RELOAD_WAIT_MS = 5000;

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
    /** Open documents a snapshot said the agent changed: their text then, until when. */
    private readonly expected = new Map<string, { before: string; until: number }>();
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
                if (!e.contentChanges.length) {
                    return;
                }
                const key = e.document.uri.toString();
                const expected = this.expected.get(key);
                if (expected) {
                    this.expected.delete(key);
                    if (Date.now() <= expected.until) {
                        this.flash({ document: e.document, before: expected.before });
                        return;
                    }
                }
                if (this.flashes.has(key)) {
                    // the user types: the highlight would mark the wrong lines
                    this.log(`highlight of ${e.document.uri.fsPath} cleared: the text changed`);
                    this.clear(key);
                }
            }),
        ];
    }

    /** A session/event: a turn's file snapshot of an open document arms the watch. */
    onEvent(event: SessionEvent): void {
        if (event.kind !== 'file_snapshot') {
            return;
        }
        const data = event.data as { path?: unknown; jump?: unknown };
        const uri = typeof data.path === 'string' && !data.jump ? resolveToolPath(data.path) : undefined;
        const doc = uri && vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        if (doc && !this.flashes.has(doc.uri.toString())) {
            this.expected.set(doc.uri.toString(), { before: doc.getText(), until: Date.now() + RELOAD_WAIT_MS });
        }
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
        this.expected.delete(key);
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
