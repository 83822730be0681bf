/**
 * The agent-host wire contract (protocol version 1), as TypeScript types.
 *
 * The params and results of every method are generated from agent_host/rpc into
 * wire.generated.ts and re-exported here; this module adds what the generator
 * does not know: the `data` of each `session/event` kind and the OpenAI chat
 * messages of session/history. camelCase on the wire, except the data the
 * server passes through unchanged (tool-call `arguments`, chat messages).
 * Results and events may gain properties in later releases: nothing here relies
 * on an object having only these keys.
 *
 * This module (like everything under src/protocol) must not import `vscode`.
 */

import type { ContextItem, HistoryResult as WireHistoryResult, StopReason } from './wire.generated';

// Every generated params and result type; HistoryResult below refines its messages.
export * from './wire.generated';

/** An OpenAI chat-format message, passed through as the server has it. */
export interface ChatMessage {
    role: 'system' | 'user' | 'assistant' | 'tool' | string;
    content?: string | null;
    tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
    tool_call_id?: string;
    [key: string]: unknown;
}

/** session/history's result, its messages typed as chat messages. */
export interface HistoryResult extends WireHistoryResult {
    messages: ChatMessage[];
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
    model_wait: ModelWaitData;
}

/** A model call still waits for its response, or will try again in retryIn seconds (not logged). */
export interface ModelWaitData {
    model: string;
    waited: number;
    attempt: number;
    attempts: number;
    retryIn: number | null;
    message: string;
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
