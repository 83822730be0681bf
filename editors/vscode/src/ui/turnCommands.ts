/**
 * The requests that run in a session and can be cancelled: Send Prompt (a turn,
 * with the editor's selection as context), Compact Session, and Cancel.
 */

import * as vscode from 'vscode';
import { AgentError, type AgentApi } from '../protocol/api';
import type { ContextItem } from '../protocol/types';
import { Transcript, formatCost } from '../protocol/transcript';
import { errorText } from './errors';
import { mentionContext } from './mentions';
import type { SessionCommands } from './sessionCommands';
import type { Operation } from './sessionState';
import type { UiContext } from './uiContext';

export class TurnCommands {
    constructor(
        private readonly ui: UiContext,
        private readonly sessions: SessionCommands,
    ) {}

    async sendPrompt(given?: string): Promise<void> {
        const { state } = this.ui;
        const prompt =
            given ??
            (await vscode.window.showInputBox({
                title: 'Agent Host: Send Prompt',
                prompt: state.current ? `To session ${state.titles.get(state.current) ?? state.current}` : 'Starts a new session',
                placeHolder: 'What should the agent do?',
                ignoreFocusOut: true,
            }));
        if (!prompt || !prompt.trim()) {
            return;
        }
        let api: AgentApi;
        try {
            api = await this.ui.server.ensureStarted();
            if (!state.current) {
                const created = await api.newSession({});
                state.transcripts.set(created.sessionId, new Transcript(created.sessionId));
                state.titles.set(created.sessionId, prompt.split('\n')[0].slice(0, 60));
                await state.setCurrent(created.sessionId);
            }
        } catch (err) {
            // not sent: the prompt goes back into the chat's input, to send once fixed
            this.ui.chat.restorePrompt(prompt);
            throw err;
        }
        const sessionId = state.current!;
        if (state.isRunning(sessionId)) {
            void vscode.window.showWarningMessage('Agent Host: a turn is running in this session. Wait for it or cancel it first.');
            return;
        }
        const context = [...this.selectionContext(), ...(await mentionContext(prompt, (line) => this.ui.log(line)))];
        const transcript = state.transcript(sessionId);
        await this.ui.chat.revealAndWait(5000);
        const setting = vscode.workspace.getConfiguration('agentHost').get<string>('model')?.trim();
        const model = state.model ?? (state.modelReset && setting ? setting : undefined);
        state.modelReset = false;
        const turn = api.send({ sessionId, prompt, context, ...(model ? { model } : {}) });
        const op: Operation = {
            sessionId,
            kind: 'send',
            done: turn,
            cancel: () => void api.cancelTurn(sessionId, turn).catch(() => undefined),
        };
        state.track(op);
        try {
            const result = await turn;
            transcript.applyResult(result);
            this.ui.log(
                `${sessionId} turn ${result.checkpoint}: ${result.stopReason}, ${result.usage.inputTokens}+${result.usage.outputTokens} tokens, ${formatCost(result.cost)} (session ${formatCost(result.totalCost)})`,
            );
            if (!['end_turn', 'cancelled'].includes(result.stopReason)) {
                void vscode.window.showWarningMessage(`Agent Host: the turn ended with ${result.stopReason}.`);
            }
        } catch (err) {
            transcript.info(errorText(err), 'error');
            throw err;
        } finally {
            state.untrack(op);
        }
    }

    private selectionContext(): ContextItem[] {
        if (!vscode.workspace.getConfiguration('agentHost').get<boolean>('sendSelection', true)) {
            return [];
        }
        const editor = vscode.window.activeTextEditor;
        if (!editor || editor.selection.isEmpty) {
            return [];
        }
        return [{ text: editor.document.getText(editor.selection), uri: editor.document.uri.toString() }];
    }

    async compactSession(): Promise<void> {
        const { state } = this.ui;
        const sessionId = await this.sessions.requireSession();
        const instructions = await vscode.window.showInputBox({
            title: 'Agent Host: Compact Session',
            prompt: 'What the summary should keep (optional)',
            ignoreFocusOut: true,
        });
        if (instructions === undefined) {
            return;
        }
        const api = await this.ui.server.ensureStarted();
        const source = new vscode.CancellationTokenSource();
        const done = api.compact({ sessionId, instructions: instructions.trim() || undefined }, source.token);
        const op: Operation = { sessionId, kind: 'compact', done, cancel: () => source.cancel() };
        state.track(op);
        try {
            const result = await done;
            const message =
                result.compacted === false || result.before === result.after
                    ? 'nothing to compact yet (too little to summarise)'
                    : `${result.before} → ${result.after} tokens`;
            // the compaction's one line (its progress events drew it), settled here
            state
                .transcript(sessionId)
                .compactionLine(
                    result.compacted === false || result.before === result.after
                        ? 'Nothing to compact yet (too little to summarise).'
                        : `Compacted the conversation: ${message}.`,
                );
            this.ui.render();
            void vscode.window.showInformationMessage(`Agent Host: compacted, ${message}.`);
        } catch (err) {
            if (err instanceof AgentError && err.codeName === 'REQUEST_CANCELLED') {
                state.transcript(sessionId).compactionLine('Compaction cancelled.', 'warning');
                this.ui.render();
                return;
            }
            throw err;
        } finally {
            state.untrack(op);
            source.dispose();
        }
    }

    async cancel(): Promise<void> {
        const sessionId = this.ui.state.current;
        const ops = this.ui.state.operations.filter((op) => op.sessionId === sessionId);
        if (!ops.length) {
            void vscode.window.showInformationMessage('Agent Host: nothing is running in this session.');
            return;
        }
        for (const op of ops) {
            op.cancel();
        }
        vscode.window.setStatusBarMessage('Agent Host: cancelling…', 3000);
    }
}
