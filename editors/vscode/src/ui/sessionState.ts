/**
 * The extension's session state: the current session (kept per workspace), the
 * known titles, a transcript per session and the requests in flight that Cancel
 * can stop.
 */

import type * as vscode from 'vscode';
import type { SessionEvent } from '../protocol/types';
import { Transcript } from '../protocol/transcript';

const CURRENT_KEY = 'agentHost.currentSession';
const MODEL_KEY = 'agentHost.chosenModel';

/** A request in flight that Cancel can stop. */
export interface Operation {
    sessionId: string;
    kind: 'send' | 'compact';
    done: Promise<unknown>;
    cancel: () => void;
    progressToken?: string | number;
}

export class SessionState {
    current: string | undefined;
    /** The model Select Model… chose for the next prompts; undefined: the setting's (or the server's). */
    model: string | undefined;
    readonly titles = new Map<string, string>();
    readonly transcripts = new Map<string, Transcript>();
    readonly operations: Operation[] = [];

    /** `render` shows the state; `log` writes to the output channel. */
    constructor(
        private readonly workspaceState: vscode.Memento,
        private readonly render: () => void,
        private readonly log: (line: string) => void,
    ) {
        this.current = workspaceState.get<string>(CURRENT_KEY);
        this.model = workspaceState.get<string>(MODEL_KEY);
    }

    /** Default was picked after another model: the next prompt names the setting's
     * model again (a session keeps the last model a prompt named). */
    modelReset = false;

    async setModel(model: string | undefined): Promise<void> {
        this.modelReset = model === undefined && (this.model !== undefined || this.modelReset);
        this.model = model;
        await this.workspaceState.update(MODEL_KEY, model);
        this.render();
    }

    transcript(sessionId: string): Transcript {
        let t = this.transcripts.get(sessionId);
        if (!t) {
            t = new Transcript(sessionId);
            this.transcripts.set(sessionId, t);
        }
        return t;
    }

    async setCurrent(sessionId: string | undefined): Promise<void> {
        this.current = sessionId;
        await this.workspaceState.update(CURRENT_KEY, sessionId);
        this.render();
    }

    /** A session/event notification from the server. */
    onEvent(event: SessionEvent): void {
        const t = this.transcript(event.sessionId);
        if (!t.apply(event)) {
            return;
        }
        if (event.kind === 'tool_call' || event.kind === 'tool_result' || event.kind === 'turn_end' || event.kind === 'file_snapshot') {
            this.log(`${event.sessionId} ${event.kind} ${JSON.stringify(event.data).slice(0, 400)}`);
        }
        if (event.sessionId === this.current) {
            this.render();
        }
    }

    // -- running operations and their progress

    isRunning(sessionId: string | undefined): boolean {
        return this.operations.some((op) => op.sessionId === sessionId);
    }

    track(op: Operation): void {
        this.operations.push(op);
        this.render();
    }

    untrack(op: Operation): void {
        const i = this.operations.indexOf(op);
        if (i >= 0) {
            this.operations.splice(i, 1);
        }
        this.render();
    }

    /** A $/progress began: it belongs to the oldest request without one (the server
     * creates the token as it takes the request, in order). */
    tieProgress(token: string | number): void {
        const op = this.operations.find((o) => o.progressToken === undefined);
        if (op) {
            op.progressToken = token;
        }
    }

    cancelProgress(token: string | number): void {
        const op = this.operations.find((o) => o.progressToken === token);
        op?.cancel();
    }
}
