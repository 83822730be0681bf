/**
 * Seeing what the agent changed, and choosing per file: Review Changes (a turn,
 * or every change since a checkpoint, in the multi-file changes editor), a
 * changed-file line of the chat opening that file's diff, and Keep / Undo per
 * file after a turn (Undo: session/revertFiles for that turn and file only; the
 * conversation stays, Undo Restore takes it back).
 */

import * as vscode from 'vscode';
import { checkpointLabel } from '../protocol/restoreText';
import { reviewTitle } from '../protocol/reviewText';
import type { ChangesParams, FileDiff } from '../protocol/types';
import type { CheckpointInfo } from '../protocol/types';
import { WHOLE, pickCheckpoint } from './checkpointPicker';
import { baseName, showChanges, showConflict, showFileDiff } from './diffViews';
import type { ReviewDocuments } from './reviewDocuments';
import type { SessionCommands } from './sessionCommands';
import type { UiContext } from './uiContext';

export class ReviewCommands {
    constructor(
        private readonly ui: UiContext,
        private readonly sessions: SessionCommands,
        private readonly docs: ReviewDocuments,
    ) {}

    /** The palette's Review Changes…: the last turn, one turn, or everything since a checkpoint. */
    async reviewChanges(): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        const picked = await pickCheckpoint(this.ui, sessionId, {
            title: 'Agent Host: Review Changes…',
            placeHolder: 'Whose changes to review (newest first)',
            whole: { label: 'Last turn', detail: 'What the last prompt changed' },
        });
        if (picked === undefined) {
            return;
        }
        if (picked === WHOLE) {
            await this.review(sessionId, { sessionId }, 'last turn');
            return;
        }
        const name = await this.turnName(sessionId, picked.seq, picked);
        type Scope = vscode.QuickPickItem & { range: boolean };
        const scope = await vscode.window.showQuickPick<Scope>(
            [
                { label: 'This turn', detail: `What the prompt “${name}” changed`, range: false },
                { label: 'Since this checkpoint', detail: 'The net change of this turn and every later one, up to now', range: true },
            ],
            { title: `Agent Host: Review Changes of ${name}` },
        );
        if (!scope) {
            return;
        }
        await this.review(
            sessionId,
            scope.range ? { sessionId, fromSeq: picked.seq } : { sessionId, seq: picked.seq },
            scope.range ? `since ${name}` : `turn ${name}`,
        );
    }

    /** The chat's Review Changes of one turn. */
    async reviewTurn(turn: number): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        await this.review(sessionId, { sessionId, seq: turn }, `turn ${await this.turnName(sessionId, turn)}`);
    }

    private async review(sessionId: string, params: ChangesParams, what: string): Promise<void> {
        const api = await this.ui.server.ensureStarted();
        const { files } = await api.changes(params);
        this.ui.log(`${sessionId} changes ${JSON.stringify(params)}: ${files.map((f) => `${f.action} ${f.path}`).join(', ') || 'none'}`);
        if (!files.length) {
            void vscode.window.showInformationMessage(`Agent Host: no files changed (${what}).`);
            return;
        }
        await showChanges(this.docs, files, reviewTitle(what));
    }

    /** A changed-file line of the chat: that file's diff in that turn. */
    async openFileDiff(turn: number, path: string): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        const file = await this.turnFile(sessionId, turn, path);
        if (file) {
            await showFileDiff(this.docs, file, `${baseName(path)} (Agent Host: turn ${await this.turnName(sessionId, turn)})`);
        }
    }

    /** Keep: the change stays; the line no longer offers a choice. */
    keepFile(turn: number, path: string): void {
        const sessionId = this.ui.state.current;
        if (sessionId) {
            this.ui.state.transcript(sessionId).markFile(turn, path, 'kept');
            this.ui.render();
        }
    }

    /** Undo: the file goes back to its text before the turn; the rest of the turn stays. */
    async undoFile(turn: number, path: string): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        const api = await this.ui.server.ensureStarted();
        let result = await api.revertFiles({ sessionId, seq: turn, paths: [path] });
        while ((result.conflicts ?? []).includes(path)) {
            const answer = await vscode.window.showWarningMessage(
                `Agent Host: ${path} changed since the agent wrote it, so it was left as it is. Undo Anyway discards your change.`,
                COMPARE,
                UNDO_ANYWAY,
            );
            if (answer === COMPARE) {
                const file = await this.turnFile(sessionId, turn, path);
                if (typeof file?.after === 'string') {
                    await showConflict(this.docs, path, file.after, `${baseName(path)}: the agent's text ↔ yours (Undo Anyway discards yours)`);
                }
                continue;
            }
            if (answer !== UNDO_ANYWAY) {
                return;
            }
            result = await api.revertFiles({ sessionId, seq: turn, paths: [path], force: true });
        }
        this.ui.log(`${sessionId} revertFiles ${turn} ${path}: ${JSON.stringify(result)}`);
        const transcript = this.ui.state.transcript(sessionId);
        transcript.markFile(turn, path, 'undone');
        transcript.info(`Undid the change to ${path} of turn ${await this.turnName(sessionId, turn)} (Undo Restore brings it back).`);
        this.ui.render();
        for (const [file, why] of Object.entries(result.notRestored ?? {})) {
            void vscode.window.showWarningMessage(`Agent Host: ${file} was not written: ${why}`);
        }
    }

    private async turnFile(sessionId: string, turn: number, path: string): Promise<FileDiff | undefined> {
        const api = await this.ui.server.ensureStarted();
        const { files } = await api.changes({ sessionId, seq: turn });
        const file = files.find((f) => f.path === path);
        if (!file) {
            void vscode.window.showInformationMessage(`Agent Host: that turn no longer changes ${path} (undone or restored since).`);
        }
        return file;
    }

    /** `3 · add a test`. */
    private async turnName(sessionId: string, seq: number, known?: CheckpointInfo): Promise<string> {
        const api = await this.ui.server.ensureStarted();
        const { checkpoints } = await api.checkpoints(sessionId);
        const index = checkpoints.findIndex((c) => c.seq === seq);
        const c = index >= 0 ? checkpoints[index] : known;
        return c ? checkpointLabel(c, index >= 0 ? index + 1 : undefined) : `#${seq}`;
    }
}

const COMPARE = 'Compare';
const UNDO_ANYWAY = 'Undo Anyway';
