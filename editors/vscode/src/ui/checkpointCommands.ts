/**
 * The checkpoint commands: Show Checkpoints and Restore Checkpoint (pick a
 * checkpoint, then what to restore) and Undo Restore. A restore that left files
 * as they are (changed since the agent wrote them) says so and offers to
 * overwrite them.
 */

import * as vscode from 'vscode';
import { checkpointLabel, conflictsText, conversationText, filesText, listPaths, notCapturedText, outsideChangesText, undoneText } from '../protocol/restoreText';
import type { CheckpointInfo, RestoreParams, RestoreResult } from '../protocol/types';
import { WHOLE, pickCheckpoint } from './checkpointPicker';
import { errorText } from './errors';
import type { ReviewDocuments } from './reviewDocuments';
import { chooseRestoreFiles } from './restorePreview';
import type { SessionCommands } from './sessionCommands';
import type { UiContext } from './uiContext';

export class CheckpointCommands {
    constructor(
        private readonly ui: UiContext,
        private readonly sessions: SessionCommands,
        private readonly reviewDocs: ReviewDocuments,
    ) {}

    /** A checkpoint to restore to, from the shared picker. */
    private async pickCheckpoint(sessionId: string, title: string): Promise<CheckpointInfo | undefined> {
        const picked = await pickCheckpoint(this.ui, sessionId, {
            title,
            placeHolder: 'Newest first. Restoring to a checkpoint returns to just before its prompt.',
        });
        return picked === WHOLE ? undefined : picked;
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
            title: `Restore to ${checkpointLabel(checkpoint)}`,
            placeHolder: 'What to restore (Undo Restore takes it back)',
        });
        if (!mode) {
            return;
        }
        const params: RestoreParams = { sessionId, seq: checkpoint.seq, files: mode.files, conversation: mode.conversation };
        if (mode.files) {
            // the preview first: what each file would become, conflicts named, files chosen
            const chosen = await chooseRestoreFiles(this.ui, this.reviewDocs, params, checkpoint);
            if (!chosen) {
                return;
            }
            Object.assign(params, chosen);
        }
        const label = mode.label.toLowerCase();
        const name = checkpointLabel(checkpoint);
        const api = await this.ui.server.ensureStarted();
        const result = await api.restore(params);
        this.ui.log(`${sessionId} restored to ${checkpoint.seq}: ${JSON.stringify(result)}`);
        await this.sessions.reload(sessionId);
        const files = filesText(result.restoredFiles);
        await this.reportRestore(params, name, label, result, {
            note: `Restored to ${name} (${label}): ${files}; ${conversationText(params.conversation, result.messagesRemoved)}.`,
            summary: `restored ${files}; ${conversationText(params.conversation, result.messagesRemoved)}.`,
        });
    }

    /**
     * The outcome of a restore: `note` in the chat, then a message (`summary`)
     * offering Undo Restore. When the restore left files as they are (conflicts),
     * the message is a warning naming them that also offers to overwrite them.
     */
    private async reportRestore(
        params: RestoreParams,
        name: string,
        label: string,
        result: RestoreResult,
        text: { note: string; summary: string },
    ): Promise<void> {
        const conflicts = result.conflicts ?? [];
        const notCaptured = result.notCaptured ?? [];
        const transcript = this.ui.state.transcript(params.sessionId);
        transcript.info(text.note);
        if (conflicts.length) {
            transcript.info(`${conflictsText(conflicts)}.`, 'warning');
        }
        if (notCaptured.length) {
            transcript.info(`${notCapturedText(notCaptured)}.`, 'warning');
        }
        const outside = outsideChangesText(result.unconfined ?? []);
        if (outside) {
            transcript.info(`${upperFirst(outside)}.`, 'warning');
        }
        this.ui.render();
        this.reportUnreverted(result.unrevertedBuffers ?? []);
        if (notCaptured.length) {
            void vscode.window.showInformationMessage(`Agent Host: ${notCapturedText(notCaptured)}.`);
        }
        const answer = conflicts.length
            ? await vscode.window.showWarningMessage(
                  `Agent Host: ${conflictsText(conflicts)}. ${upperFirst(text.summary)}`,
                  OVERWRITE,
                  UNDO,
              )
            : await vscode.window.showInformationMessage(`Agent Host: ${text.summary}`, UNDO);
        if (answer === OVERWRITE) {
            await this.overwrite(params, name, label, conflicts);
        } else if (answer === UNDO) {
            await this.undoRestore();
        }
    }

    /** Overwrite them: the same restore again with the conflicts overwritten. An
     * undo is exact, so: undo the restore, then restore with `force`. */
    private async overwrite(params: RestoreParams, name: string, label: string, conflicts: string[]): Promise<void> {
        const api = await this.ui.server.ensureStarted();
        const undone = await api.undoRestore(params.sessionId);
        let restored: RestoreResult;
        try {
            restored = await api.restore({ ...params, force: true });
        } catch (err) {
            await this.sessions.reload(params.sessionId);
            this.ui.state
                .transcript(params.sessionId)
                .info(`Restore undone to overwrite the changed files, but restoring to ${name} again failed: ${errorText(err)}.`, 'error');
            this.ui.render();
            throw err;
        }
        this.ui.log(`${params.sessionId} restored to ${params.seq} again, overwriting: ${JSON.stringify({ undone, restored })}`);
        await this.sessions.reload(params.sessionId);
        this.reportUnreverted(undone.unrevertedBuffers ?? []);
        // files the undo left (changed since the restore wrote them) are overwritten too
        const wanted = new Set([...conflicts, ...(undone.conflicts ?? [])]);
        const overwritten = restored.restoredFiles.filter((f) => wanted.has(f));
        const what = overwritten.length ? listPaths(overwritten) : 'nothing (the files no longer differed)';
        const files = filesText(restored.restoredFiles);
        const conversation = conversationText(params.conversation, restored.messagesRemoved);
        await this.reportRestore(params, name, label, restored, {
            note: `Restored to ${name} again (${label}), overwriting ${what}: ${files}; ${conversation}.`,
            summary: `restored to ${name} again, overwriting ${what}: ${files}; ${conversation}. Undo Restore brings back what they held.`,
        });
    }

    private reportUnreverted(paths: string[]): void {
        if (paths.length) {
            void vscode.window.showWarningMessage(
                `Agent Host: the open editor(s) of ${paths.join(', ')} could not be brought back; they differ from the files on disk (File: Revert File reloads them).`,
            );
        }
    }

    async undoRestore(): Promise<void> {
        const sessionId = await this.sessions.requireSession();
        const api = await this.ui.server.ensureStarted();
        const result = await api.undoRestore(sessionId);
        this.ui.log(`${sessionId} undo restore: ${JSON.stringify(result)}`);
        await this.sessions.reload(sessionId);
        const conflicts = result.conflicts ?? [];
        const transcript = this.ui.state.transcript(sessionId);
        const done = `restore undone (${undoneText(result)})`;
        transcript.info(`Restore undone: ${undoneText(result)}.`);
        if (conflicts.length) {
            transcript.info(`${conflictsText(conflicts, SINCE_RESTORE)}.`, 'warning');
        }
        this.ui.render();
        this.reportUnreverted(result.unrevertedBuffers ?? []);
        if (conflicts.length) {
            // nothing to overwrite them with: an undo puts back what the restore found
            void vscode.window.showWarningMessage(`Agent Host: ${conflictsText(conflicts, SINCE_RESTORE)}. ${upperFirst(done)}.`);
        } else {
            void vscode.window.showInformationMessage(`Agent Host: ${done}.`);
        }
    }
}

const OVERWRITE = 'Overwrite them';
const UNDO = 'Undo Restore';
/** What an undo's conflicts changed since. */
const SINCE_RESTORE = 'the restore wrote';

function upperFirst(text: string): string {
    return text.charAt(0).toUpperCase() + text.slice(1);
}
