/**
 * The agent-host wire contract (protocol version 1), as TypeScript types.
 *
 * Mirrors agent_host/rpc/types.py and docs/protocol.md: camelCase on the wire,
 * except the data the server passes through unchanged (tool-call `arguments`
 * and the OpenAI chat messages of session/history). Results and events may gain
 * properties in later releases: nothing here relies on an object having only
 * these keys.
 *
 * This module (like everything under src/protocol) must not import `vscode`.
 */

export const PROTOCOL_VERSION = 1;

export type Approval = 'ask' | 'auto-edit' | 'auto' | 'read-only';
export type StopReason = 'end_turn' | 'cancelled' | 'max_turns' | 'refusal' | 'max_tokens' | 'error';
export type Decision = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
export const DECISIONS: readonly Decision[] = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

/** `initializationOptions` of `initialize`; every field optional. */
export interface InitializationOptions {
    /** file:///dir, a directory, sqlite:///x.db or memory:. */
    store?: string;
    /** provider/model (openai/gpt-4.1-mini) or scripted:PATH. */
    model?: string;
    approval?: Approval;
}

export interface NewParams {
    model?: string | null;
    title?: string | null;
}
export interface NewResult {
    sessionId: string;
}

export interface ContextItem {
    text: string;
    uri?: string | null;
}

export interface SendParams {
    prompt: string;
    /** Omitted: a new session. */
    sessionId?: string | null;
    model?: string | null;
    context?: ContextItem[];
}

export interface Usage {
    inputTokens: number;
    outputTokens: number;
}

export interface SendResult {
    sessionId: string;
    /** Seq of this turn's prompt; session/restore to it undoes the turn. */
    checkpoint: number;
    stopReason: StopReason;
    text: string;
    usage: Usage;
    /** USD for this turn; null when unknown (a model neither the provider nor the
     * server's price table prices). */
    cost: number | null;
    /** USD for the session so far; null when any of its model calls' cost is unknown. */
    totalCost: number | null;
}

export interface SessionParams {
    sessionId: string;
}

export interface ListParams {
    /** A folder, as a path or file:// URI: only the sessions started in it (symlinks
     * resolved). Omitted: every session in the store. */
    workspace?: string | null;
    limit?: number | null;
    /** nextCursor of the previous page. */
    cursor?: string | null;
}

export interface SessionSummary {
    sessionId: string;
    title: string;
    /** ISO 8601. */
    createdAt: string;
    updatedAt: string;
    turns: number;
    head: number;
    /** The folder the session was started in; "" when its log does not say. */
    workspace: string;
}

export interface ListResult {
    sessions: SessionSummary[];
    nextCursor: string | null;
}

export interface ResumeResult {
    sessionId: string;
    head: number;
    turns: number;
}

export interface HistoryParams {
    sessionId: string;
    limit?: number | null;
}

/** An OpenAI chat-format message, passed through as the server has it. */
export interface ChatMessage {
    role: 'system' | 'user' | 'assistant' | 'tool' | string;
    content?: string | null;
    tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
    tool_call_id?: string;
    [key: string]: unknown;
}

export interface HistoryResult {
    messages: ChatMessage[];
}

export interface CheckpointInfo {
    seq: number;
    prompt: string;
    createdAt: string;
    /** The files this prompt's turn changed (relative to the workspace). */
    files: string[];
    /** Of `files`, those a shell command changed (not the agent's file tools). */
    fromCommands?: string[];
    /** Paths a command changed that were not captured (ignored, or over the size
     * cap): a restore cannot put them back. */
    notCaptured?: string[];
    /** MCP tools the turn called: what they did outside the workspace no restore undoes. */
    externalTools?: string[];
}

export interface CheckpointsResult {
    checkpoints: CheckpointInfo[];
}

export interface RestoreParams {
    sessionId: string;
    seq: number;
    files?: boolean;
    conversation?: boolean;
    /** Overwrite the files changed since the session last wrote them (default false:
     * they are left as they are and listed in `conflicts`). Their current content is
     * kept, so session/undoRestore brings it back. */
    force?: boolean;
}

export interface RestoreResult {
    restoredFiles: string[];
    removedEvents: number;
    /** Open buffers the editor did not bring back. */
    unrevertedBuffers: string[];
    /** Files left as they are: changed since the session last wrote them (the
     * user's edits, a formatter, an open buffer's unsaved text). With `force`, only
     * those that changed while the restore ran. */
    conflicts?: string[];
    /** Paths the later turns' commands changed that were not captured (ignored, or
     * over the size cap), so were not put back. */
    notCaptured?: string[];
}

export interface UndoRestoreResult {
    restoredFiles: string[];
    restoredEvents: number;
    unrevertedBuffers: string[];
    /** Files left as they are: changed since the restore wrote them. */
    conflicts?: string[];
}

export interface CompactParams {
    sessionId: string;
    instructions?: string | null;
}

export interface CompactResult {
    before: number;
    after: number;
    /** False when nothing was written (then before == after). */
    compacted?: boolean;
}

export interface ForkParams {
    sessionId: string;
    /** A checkpoint's seq: the fork has the conversation up to just before that
     * prompt. Omitted: all of it. */
    seq?: number | null;
    /** Default: "fork of" the source's title. */
    title?: string | null;
}

export interface ForkResult {
    /** The new session; the source is untouched. */
    sessionId: string;
}

// -- session/event

interface Logged {
    seq: number;
    /** UNIX seconds. */
    ts: number;
    type: string;
}

export interface UserPromptData extends Logged {
    /** The prompt alone (what titles are made of). */
    text: string;
    /** What was attached to it (the model reads both). */
    context?: ContextItem[];
}
export interface TextDeltaData {
    text: string;
}
export interface AssistantMessageData extends Logged {
    text: string;
}
export interface ToolCallData extends Logged {
    callId: string;
    name: string;
    arguments: Record<string, unknown>;
}
export interface ToolResultData extends Logged {
    callId: string;
    output: string;
    isError: boolean;
}
export interface FileSnapshotData extends Logged {
    path: string;
    /** Blob id of the content before; null: the file did not exist. */
    before: string | null;
    /** Blob id of the content after; null: deleted. */
    after: string | null;
    bufferBefore: string | null;
    jump: boolean;
}
export interface UsageData extends Logged {
    inputTokens: number;
    outputTokens: number;
    /** USD; null when unknown. */
    cost: number | null;
    model: string;
}
export interface TurnEndData extends Logged {
    stopReason: StopReason;
}
export interface CompactionProgressData {
    stage: 'started' | 'summarising' | 'done' | string;
    message: string;
}

export interface EventDataByKind {
    user_prompt: UserPromptData;
    text_delta: TextDeltaData;
    assistant_message: AssistantMessageData;
    tool_call: ToolCallData;
    tool_result: ToolResultData;
    file_snapshot: FileSnapshotData;
    usage: UsageData;
    turn_end: TurnEndData;
    compaction_progress: CompactionProgressData;
    mcp_server: McpServerData;
}

/** An MCP server of the session: started, failed (its tools are left out), restarted. */
export interface McpServerData {
    server: string;
    state: 'ready' | 'failed' | 'restarted' | 'stopped';
    message: string;
    tools: number;
}

export type KnownEventKind = keyof EventDataByKind;

export type KnownEvent = {
    [K in KnownEventKind]: { sessionId: string; kind: K; data: EventDataByKind[K] };
}[KnownEventKind];

/** A `session/event` notification's params. Kinds this client does not know are
 * passed on too (with `data` untyped): ignore them. */
export type SessionEvent = KnownEvent | { sessionId: string; kind: string; data: object };

export function isKind<K extends KnownEventKind>(
    event: SessionEvent,
    kind: K,
): event is { sessionId: string; kind: K; data: EventDataByKind[K] } {
    return event.kind === kind;
}

// -- session/requestPermission

export interface PermissionParams {
    sessionId: string;
    tool: string;
    kind: 'edit' | 'command' | 'external';
    /** The tool's arguments as the model sent them (snake_case keys). */
    arguments: Record<string, unknown>;
    /** For edits: a unified diff of the change. */
    diff?: string | null;
    /** For edits of a text file: the whole text the tool would leave (the server's preview). */
    proposed?: string | null;
    options: Decision[];
}

export interface PermissionResult {
    outcome: Decision;
}
