/**
 * Shows the current session: the chat view's state, the status bar item (cost,
 * a spinner while a request runs, tokens in the tooltip) and the
 * agentHost.turnRunning context key.
 */

import * as vscode from 'vscode';
import { formatCost, type Transcript } from '../protocol/transcript';
import type { ChatViewProvider } from './chatView';
import type { SessionState } from './sessionState';

export class StatusView {
    /** The agentHost.turnRunning context key as last set. */
    private shownRunning: boolean | undefined;

    constructor(
        private readonly state: SessionState,
        private readonly chat: ChatViewProvider,
        private readonly status: vscode.StatusBarItem,
        private readonly serverState: () => string,
    ) {}

    render(): void {
        const current = this.state.current;
        const running = this.state.isRunning(current);
        if (running !== this.shownRunning) {
            this.shownRunning = running;
            void vscode.commands.executeCommand('setContext', 'agentHost.turnRunning', running);
        }
        const t = current ? this.state.transcripts.get(current) : undefined;
        const cost = t ? (t.state.costKnown ? formatCost(t.state.cost) : formatCost(undefined)) : formatCost(0);
        const title = current ? (this.state.titles.get(current) ?? promptTitle(t) ?? 'New session') : 'No session';
        this.chat.update({
            sessionId: current,
            title,
            entries: t ? t.entries : [],
            running: running || Boolean(t?.state.running),
            cost,
            serverState: this.serverState(),
            model: this.state.model ?? '',
        });
        this.status.text = `${running ? '$(sync~spin)' : '$(hubot)'} ${cost}`;
        this.status.tooltip = current
            ? `Agent Host session ${current}\n${t?.state.inputTokens ?? 0} input / ${t?.state.outputTokens ?? 0} output tokens this window${
                  t && !t.state.costKnown
                      ? '\nCost: known after the next turn of this resumed session'
                      : t?.state.cost === null
                        ? '\nCost: unknown, the server has no price for a model used (see its log)'
                        : ''
              }\nClick to open the chat`
            : 'Agent Host: no session yet. Click to open the chat';
        this.status.show();
    }
}

/** A session's title as the server makes it when none was given: its first prompt's first line. */
function promptTitle(t: Transcript | undefined): string | undefined {
    const first = t?.entries.find((e) => e.role === 'user');
    const line = first?.role === 'user' ? first.text.split('\n')[0].trim() : '';
    return line ? line.slice(0, 60) : undefined;
}
