/** What the command modules share: the session state, the server, the chat view
 * and the controller's log, render and error display. */

import type { AgentServer } from './agentServer';
import type { ChatViewProvider } from './chatView';
import type { SessionState } from './sessionState';

export interface UiContext {
    readonly state: SessionState;
    readonly server: AgentServer;
    readonly chat: ChatViewProvider;
    log(line: string): void;
    /** Shows the current session in the chat view and the status bar. */
    render(): void;
    showError(err: unknown): void;
}
