/**
 * Typed session/* calls over any JSON-RPC endpoint: a vscode-jsonrpc
 * MessageConnection (tests, headless use) or the extension's LanguageClient.
 *
 * No `vscode` import here: this runs in plain Node.
 */

import type { CancellationToken } from 'vscode-jsonrpc';
import * as m from './methods';
import type {
    ChangesParams,
    ChangesResult,
    CheckpointsResult,
    CompactParams,
    CompactResult,
    Decision,
    ForkParams,
    ForkResult,
    HistoryParams,
    HistoryResult,
    ListParams,
    ListResult,
    NewParams,
    NewResult,
    PermissionParams,
    PermissionResult,
    RestoreParams,
    RestorePreview,
    RestoreResult,
    ResumeResult,
    RevertFilesParams,
    SendParams,
    SendResult,
    SessionEvent,
    SessionSummary,
    UndoRestoreResult,
} from './types';

export interface Disposable {
    dispose(): void;
}

/** What AgentApi needs of a connection. Handlers registered through it replace
 * earlier ones for the same method (as in vscode-jsonrpc), so AgentApi registers
 * each server method once and fans out itself. */
export interface RpcEndpoint {
    request<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
    notify(method: string, params: unknown): void | Promise<void>;
    onNotification(method: string, handler: (params: any) => void): Disposable;
    onRequest(method: string, handler: (params: any, token: CancellationToken) => unknown): Disposable;
}

/** An error response from the server, with its wire code and, when known, its name. */
export class AgentError extends Error {
    readonly code: number;
    readonly codeName: m.ErrorCodeName | undefined;
    readonly data: unknown;

    constructor(code: number, message: string, data?: unknown) {
        super(message);
        this.name = 'AgentError';
        this.code = code;
        this.codeName = m.errorName(code);
        this.data = data;
    }

    /** `data.error` names the engine's exception class, for logs. */
    get serverError(): string | undefined {
        const data = this.data as { error?: unknown } | undefined;
        return typeof data?.error === 'string' ? data.error : undefined;
    }
}

function toAgentError(err: unknown): unknown {
    if (err instanceof AgentError) {
        return err;
    }
    if (typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number') {
        const e = err as { code: number; message?: unknown; data?: unknown };
        return new AgentError(e.code, typeof e.message === 'string' ? e.message : String(e.message), e.data);
    }
    return err;
}

export type EventListener = (event: SessionEvent) => void;
export type PermissionHandler = (params: PermissionParams, token: CancellationToken) => Decision | Promise<Decision>;

/** session/* over an RpcEndpoint. */
export class AgentApi implements Disposable {
    private readonly listeners = new Set<EventListener>();
    private permissionHandler: PermissionHandler | undefined;
    private readonly registrations: Disposable[];

    constructor(private readonly endpoint: RpcEndpoint) {
        this.registrations = [
            endpoint.onNotification(m.EVENT, (params: SessionEvent) => {
                for (const listener of [...this.listeners]) {
                    try {
                        listener(params);
                    } catch (err) {
                        // one listener's bug must not starve the others
                        console.error('agent-host: session/event listener failed', err);
                    }
                }
            }),
            endpoint.onRequest(m.REQUEST_PERMISSION, (params: PermissionParams, token) =>
                this.answerPermission(params, token),
            ),
        ];
    }

    dispose(): void {
        for (const r of this.registrations) {
            r.dispose();
        }
        this.listeners.clear();
    }

    /** Every `session/event` notification, in the order the server sent them. */
    onEvent(listener: EventListener): Disposable {
        this.listeners.add(listener);
        return { dispose: () => this.listeners.delete(listener) };
    }

    /** Who answers `session/requestPermission`. Without a handler, or when it throws
     * or answers something not in `options`, the answer is reject_once. */
    setPermissionHandler(handler: PermissionHandler | undefined): void {
        this.permissionHandler = handler;
    }

    private async answerPermission(params: PermissionParams, token: CancellationToken): Promise<PermissionResult> {
        const handler = this.permissionHandler;
        let outcome: Decision = 'reject_once';
        if (handler !== undefined) {
            try {
                const answer = await handler(params, token);
                const allowed = Array.isArray(params.options) && params.options.length > 0 ? params.options : undefined;
                if (allowed === undefined || allowed.includes(answer)) {
                    outcome = answer;
                }
            } catch (err) {
                console.error('agent-host: permission handler failed; rejecting once', err);
            }
        }
        return { outcome };
    }

    private async call<R>(method: string, params: unknown, token?: CancellationToken): Promise<R> {
        try {
            return await this.endpoint.request<R>(method, params, token);
        } catch (err) {
            throw toAgentError(err);
        }
    }

    newSession(params: NewParams = {}): Promise<NewResult> {
        return this.call(m.NEW, params);
    }

    /** One turn; resolves when the turn has ended (stopReason says how). */
    send(params: SendParams, token?: CancellationToken): Promise<SendResult> {
        return this.call(m.SEND, params, token);
    }

    /** session/cancel: a notification; no-op when no turn runs. */
    async cancel(sessionId: string): Promise<void> {
        await this.endpoint.notify(m.CANCEL, { sessionId });
    }

    /**
     * Cancels the turn behind `turn` for sure: session/cancel now and again every
     * `intervalMs` until `turn` settles (a cancel that arrives before the turn has
     * started does nothing, see docs/protocol.md). Resolves with the turn's outcome.
     */
    async cancelTurn<T>(sessionId: string, turn: Promise<T>, intervalMs = 1000, attempts = 30): Promise<T> {
        let settled = false;
        const done = turn.finally(() => {
            settled = true;
        });
        done.catch(() => undefined);
        for (let i = 0; i < attempts && !settled; i++) {
            await this.cancel(sessionId);
            await Promise.race([done.catch(() => undefined), delay(intervalMs)]);
        }
        return turn;
    }

    list(params: ListParams = {}): Promise<ListResult> {
        return this.call(m.LIST, params);
    }

    /** Every session (with `workspace`, those started in that folder), following
     * nextCursor page by page. */
    async listAll(pageSize = 100, workspace?: string): Promise<SessionSummary[]> {
        const all: SessionSummary[] = [];
        let cursor: string | null = null;
        do {
            const page: ListResult = await this.list({ limit: pageSize, cursor, ...(workspace === undefined ? {} : { workspace }) });
            all.push(...page.sessions);
            cursor = page.nextCursor ?? null;
        } while (cursor !== null && cursor !== undefined);
        return all;
    }

    resume(sessionId: string): Promise<ResumeResult> {
        return this.call(m.RESUME, { sessionId });
    }

    history(params: HistoryParams): Promise<HistoryResult> {
        return this.call(m.HISTORY, params);
    }

    deleteSession(sessionId: string): Promise<null> {
        return this.call(m.DELETE, { sessionId });
    }

    checkpoints(sessionId: string): Promise<CheckpointsResult> {
        return this.call(m.CHECKPOINTS, { sessionId });
    }

    restore(params: RestoreParams): Promise<RestoreResult> {
        return this.call(m.RESTORE, params);
    }

    /** What a restore with these params would do, nothing written (a dry run). */
    async restorePreview(params: RestoreParams): Promise<RestorePreview> {
        const result: RestoreResult = await this.call(m.RESTORE, { ...params, dryRun: true });
        if (!result.preview) {
            throw new Error('the server did not return a preview (it predates restore previews: update agent-host)');
        }
        return result.preview;
    }

    /** Per-file diffs: one turn (`seq`), a checkpoint range (`fromSeq`, `toSeq`), or the last turn. */
    changes(params: ChangesParams): Promise<ChangesResult> {
        return this.call(m.CHANGES, params);
    }

    /** Undo one turn's changes to some files; the conversation is kept. */
    revertFiles(params: RevertFilesParams): Promise<RestoreResult> {
        return this.call(m.REVERT_FILES, params);
    }

    undoRestore(sessionId: string): Promise<UndoRestoreResult> {
        return this.call(m.UNDO_RESTORE, { sessionId });
    }

    compact(params: CompactParams, token?: CancellationToken): Promise<CompactResult> {
        return this.call(m.COMPACT, params, token);
    }

    /** A new session with the conversation up to just before checkpoint `seq` (all
     * of it without one); the source is untouched. */
    fork(params: ForkParams): Promise<ForkResult> {
        return this.call(m.FORK, params);
    }

    /** The server stops a running turn of the session and lets go of it; the
     * session stays stored (resume or send to it again at any time). */
    close(sessionId: string): Promise<null> {
        return this.call(m.CLOSE, { sessionId });
    }
}

function delay(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}
