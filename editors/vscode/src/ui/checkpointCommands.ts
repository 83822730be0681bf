/**
 * The checkpoint commands: Show Checkpoints and Restore Checkpoint (pick a
 * checkpoint, then what to restore) and Undo Restore.
 */

import * as vscode from 'vscode';
import type { CheckpointInfo } from '../protocol/types';
import type { SessionCommands } from './sessionCommands';
import type { UiContext } from './uiContext';

export class CheckpointCommands {
    constructor(
        private readonly ui: UiContext,
        private readonly sessions: SessionCommands,
    ) {}

    private async pickCheckpoint(sessionId: string, title: string): Promise<CheckpointInfo | undefined> {
        const api = await this.ui.server.ensureStarted();
        const { checkpoints } = await api.checkpoints(sessionId);
        if (!checkpoints.length) {
            void vscode.window.showInformationMessage('Agent Host: this session has no checkpoints yet (one per prompt).');
            return undefined;
        }
        type Item = vscode.QuickPickItem & { checkpoint: CheckpointInfo };
        const items: Item[] = [...checkpoints].reverse().map((c) => ({
            label: `#${c.seq}  ${c.prompt.split('\n')[0].slice(0, 80)}`,
            description: new Date(c.createdAt).toLocaleString(),
            detail: c.files.length ? `changed: ${c.files.join(', ')}` : 'no files changed',
            checkpoint: c,
        }));
        const picked = await vscode.window.showQuickPick(items, {
            title,
            placeHolder: 'Newest first. Restoring to a checkpoint returns to just before its prompt.',
            matchOnDescription: true,
            matchOnDetail: true,
        });
        return picked?.checkpoint;
    }

    async showCheckpoints(): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        const checkpoint = await this.pickCheckpoint(sessionId, 'Agent Host: Checkpoints');
        if (checkpoint) {
            await this.restoreTo(sessionId, checkpoint);
        }
    }

    async restoreCheckpoint(): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        const checkpoint = await this.pickCheckpoint(sessionId, 'Agent Host: Restore Checkpoint…');
        if (checkpoint) {
            await this.restoreTo(sessionId, checkpoint);
        }
    }

    private async restoreTo(sessionId: string, checkpoint: CheckpointInfo): Promise<void> {
        type Mode = vscode.QuickPickItem & { files: boolean; conversation: boolean };
        const modes: Mode[] = [
            {
                label: 'Files and conversation',
                detail: 'Put the files back as they were and forget the later turns',
                files: true,
                conversation: true,
            },
            { label: 'Files only', detail: 'Put the files back; keep the conversation', files: true, conversation: false },
            {
                label: 'Conversation only',
                detail: 'Rewind the conversation; leave the files as they are now',
                files: false,
                conversation: true,
            },
        ];
        const mode = await vscode.window.showQuickPick(modes, {
            title: `Restore to #${checkpoint.seq}: ${checkpoint.prompt.split('\n')[0].slice(0, 60)}`,
            placeHolder: 'What to restore (Undo Restore takes it back)',
        });
        if (!mode) {
            return;
        }
        const api = await this.ui.server.ensureStarted();
        const result = await api.restore({ sessionId, seq: checkpoint.seq, files: mode.files, conversation: mode.conversation });
        this.ui.log(`${sessionId} restored to ${checkpoint.seq}: ${JSON.stringify(result)}`);
        await this.sessions.reload(sessionId);
        const files = result.restoredFiles.length ? `${result.restoredFiles.length} file(s): ${result.restoredFiles.join(', ')}` : 'no files';
        this.ui.state.transcript(sessionId).info(`Restored to #${checkpoint.seq} (${mode.label.toLowerCase()}): ${files}.`);
        this.ui.render();
        this.reportUnreverted(result.unrevertedBuffers);
        this.reportKept(result.keptFiles ?? []);
        const answer = await vscode.window.showInformationMessage(
            `Agent Host: restored ${files}; ${result.removedEvents} event(s) set aside.`,
            'Undo Restore',
        );
        if (answer === 'Undo Restore') {
            await this.undoRestore();
        }
    }

    private reportUnreverted(paths: string[]): void {
        if (paths.length) {
            void vscode.window.showWarningMessage(
                `Agent Host: the open editor(s) of ${paths.join(', ')} could not be brought back; they differ from the files on disk (File: Revert File reloads them).`,
            );
        }
    }

    private reportKept(paths: string[]): void {
        if (paths.length) {
            void vscode.window.showWarningMessage(
                `Agent Host: ${paths.join(', ')} changed since the agent wrote them and were left as they are.`,
            );
        }
    }

    async undoRestore(): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        const api = await this.ui.server.ensureStarted();
        const result = await api.undoRestore(sessionId);
        this.ui.log(`${sessionId} undo restore: ${JSON.stringify(result)}`);
        await this.sessions.reload(sessionId);
        this.ui.state.transcript(sessionId).info(`Restore undone: ${result.restoredFiles.length} file(s), ${result.restoredEvents} event(s) back.`);
        this.ui.render();
        this.reportUnreverted(result.unrevertedBuffers);
        this.reportKept(result.keptFiles ?? []);
        void vscode.window.showInformationMessage(
            `Agent Host: restore undone (${result.restoredFiles.length} file(s), ${result.restoredEvents} event(s) back).`,
        );
    }
}
