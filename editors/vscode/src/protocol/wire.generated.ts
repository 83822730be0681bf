/**
 * The agent-host wire contract, GENERATED from agent_host/rpc (the method table
 * in methods.py, the types in types.py, the codes in errors.py). Do not edit:
 * run `python -m agent_host.rpc.typescript > editors/vscode/src/protocol/wire.generated.ts`.
 */

export const PROTOCOL_VERSION = 1;

// -- methods

/** Start an empty session; returns its id. (client->server request) */
export const NEW = 'session/new';
/** Run one turn: the prompt, then model and tool calls until the model stops. (client->server request) */
export const SEND = 'session/send';
/** The stored sessions, most recently updated first, in pages. (client->server request) */
export const LIST = 'session/list';
/** Load a session and make it the server's current one. (client->server request) */
export const RESUME = 'session/resume';
/** The conversation as the model sees it, in OpenAI chat format. (client->server request) */
export const HISTORY = 'session/history';
/** Delete a session's log. (client->server request) */
export const DELETE = 'session/delete';
/** One checkpoint per prompt, oldest first, with the files its turn changed. (client->server request) */
export const CHECKPOINTS = 'session/checkpoints';
/** Return the session, files and conversation, to just before the prompt at seq (dryRun: only say what it would do; paths: only those files). (client->server request) */
export const RESTORE = 'session/restore';
/** Per-file diffs of a turn, or of a range of checkpoints, as the session recorded them. (client->server request) */
export const CHANGES = 'session/changes';
/** Undo one turn's changes to chosen files, the conversation kept (undoable). (client->server request) */
export const REVERT_FILES = 'session/revertFiles';
/** Undo the session's last restore. (client->server request) */
export const UNDO_RESTORE = 'session/undoRestore';
/** Have the model summarise the conversation before the latest prompt. (client->server request) */
export const COMPACT = 'session/compact';
/** A new session with another's conversation up to a checkpoint, or all of it. (client->server request) */
export const FORK = 'session/fork';
/** This server is done with the session: its turn is cancelled, what it held let go. (client->server request) */
export const CLOSE = 'session/close';
/** Cancel the turn running in the session, if any. (client->server notification) */
export const CANCEL = 'session/cancel';
/** Something happened in a running turn or compaction. (server->client notification) */
export const EVENT = 'session/event';
/** May the agent run this tool call? (server->client request) */
export const REQUEST_PERMISSION = 'session/requestPermission';

/** The requests a client sends, each answered by the server. */
export const REQUESTS = [NEW, SEND, LIST, RESUME, HISTORY, DELETE, CHECKPOINTS, RESTORE, CHANGES, REVERT_FILES, UNDO_RESTORE, COMPACT, FORK, CLOSE] as const;

/** Each method's params and result (null: none, or answered with null). */
export interface Methods {
    'session/new': { params: NewParams; result: NewResult };
    'session/send': { params: SendParams; result: SendResult };
    'session/list': { params: ListParams; result: ListResult };
    'session/resume': { params: SessionParams; result: ResumeResult };
    'session/history': { params: HistoryParams; result: HistoryResult };
    'session/delete': { params: SessionParams; result: null };
    'session/checkpoints': { params: SessionParams; result: CheckpointsResult };
    'session/restore': { params: RestoreParams; result: RestoreResult };
    'session/changes': { params: ChangesParams; result: ChangesResult };
    'session/revertFiles': { params: RevertFilesParams; result: RestoreResult };
    'session/undoRestore': { params: UndoRestoreParams; result: UndoRestoreResult };
    'session/compact': { params: CompactParams; result: CompactResult };
    'session/fork': { params: ForkParams; result: ForkResult };
    'session/close': { params: SessionParams; result: null };
    'session/cancel': { params: SessionParams; result: null };
    'session/event': { params: EventParams; result: null };
    'session/requestPermission': { params: PermissionParams; result: PermissionResult };
}

// -- error codes

export const ErrorCode = {
    INVALID_PARAMS: -32602,
    METHOD_NOT_FOUND: -32601,
    INTERNAL_ERROR: -32603,
    REQUEST_CANCELLED: -32800,
    SESSION_NOT_FOUND: -32001,
    CHECKPOINT_CONFLICT: -32002,
    CHECKPOINT_NOT_FOUND: -32003,
    INCOMPATIBLE_STATE: -32004,
    UNSUPPORTED_CAPABILITY: -32005,
    TURN_IN_PROGRESS: -32006,
    MODEL_ERROR: -32007,
    PERMISSION_DENIED: -32008,
    STORE_UNAVAILABLE: -32009,
    SNAPSHOT_UNAVAILABLE: -32010,
    IO_ERROR: -32011,
    HOST_CLOSED: -32012,
    LEASE_LOST: -32013,
} as const;

// -- params, results and the types they hold

/** `initializationOptions` of `initialize`; every field optional. */
export interface InitializationOptions {
    /**
     * Session store URL: file:///dir, a directory, sqlite:///x.db or memory:.
     * Default: the user data folder.
     */
    store?: string | null;
    /** Model as provider/model (openai/gpt-4.1-mini) or scripted:PATH. */
    model?: string | null;
    /** Which tool calls need the user's permission. */
    approval?: Approval;
    /**
     * MCP servers whose tools every session's turns are offered, in ACP's
     * McpServer shape: `{"name", "command", "args", "env": [{"name", "value"}]}`
     * or `{"type": "http", "name", "url", "headers": [{"name", "value"}]}`.
     */
    mcpServers?: Record<string, unknown>[];
    /**
     * What of the server's environment commands and MCP servers see:
     * `{"include": [patterns kept], "exclude": [patterns removed], "set": {NAME:
     * value}}`. Default: all of it but names like `*KEY*`, `*TOKEN*`,
     * `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*` and the model providers' keys.
     */
    shellEnvironment?: Record<string, unknown> | null;
    /**
     * How commands and stdio MCP servers are confined: `"workspace-write"` (the
     * default: write the workspace and a private temp, read all but secret places, no
     * network), `"read-only"`, `"full"` (no sandbox), or `{"mode", "writable",
     * "deny", "network", "gitWritable", "limits": {"processes", "memoryBytes",
     * "fileSizeBytes", "cpuSeconds"}, "fallback": "refuse" | "full"}` (docs/security.md).
     * Unset: AGENT_HOST_SANDBOX, else workspace-write.
     */
    sandbox?: string | Record<string, unknown> | null;
    /**
     * Seconds one attempt at a model call may wait for the response to begin before
     * it is retried (and the user told). A number, or per provider: `{"*": 15,
     * "ollama": 90}` or `"15,ollama=90"`. Default 15 (ollama 50); with the retries,
     * a stalled endpoint is an error within 60 s. Unset: AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT.
     */
    modelFirstByteTimeout?: number | string | Record<string, number> | null;
    /**
     * Seconds a model call may send nothing but keep-alives (the first token
     * included) before the turn fails with a model timeout. Default 120 (unset:
     * AGENT_HOST_MODEL_TIMEOUT); per provider as for modelFirstByteTimeout.
     */
    modelTimeout?: number | string | Record<string, number> | null;
    /**
     * Seconds one model call may take in all, retries included. Default 1200 (unset:
     * AGENT_HOST_MODEL_TOTAL_TIMEOUT); per provider as for modelFirstByteTimeout.
     */
    modelTotalTimeout?: number | string | Record<string, number> | null;
    /**
     * How many times a model call that failed before answering is tried again.
     * Default 2 (ollama 0; unset: AGENT_HOST_MODEL_RETRIES); per provider as for
     * modelFirstByteTimeout.
     */
    modelRetries?: number | string | Record<string, number> | null;
}

export type Approval = 'ask' | 'auto-edit' | 'auto' | 'read-only';
export const APPROVALS: readonly Approval[] = ['ask', 'auto-edit', 'auto', 'read-only'];

export interface NewParams {
    /** The session's model (default: the server's); its turns use it. */
    model?: string | null;
    title?: string | null;
    /**
     * MCP servers for this session's turns, in ACP's McpServer shape, instead of
     * the server's (initializationOptions.mcpServers). Held by this server, never
     * stored: give them again on the session in another server.
     */
    mcpServers?: Record<string, unknown>[] | null;
}

export interface NewResult {
    sessionId: string;
}

export interface SendParams {
    prompt: string;
    /** Omitted: a new session. */
    sessionId?: string | null;
    /** This turn's model, instead of the one the session was started with. */
    model?: string | null;
    /**
     * Logged beside the prompt (`user_prompt`'s `context`), out of titles; the
     * model reads it appended to the prompt as `<context uri=...>` blocks.
     */
    context?: ContextItem[];
}

/** Text the user attached to a prompt (an open file, a selection). */
export interface ContextItem {
    text: string;
    uri?: string | null;
}

export interface SendResult {
    sessionId: string;
    /** Seq of this turn's prompt; session/restore to it undoes the turn. */
    checkpoint: number;
    stopReason: StopReason;
    text: string;
    usage: Usage;
    /**
     * USD for this turn; null when unknown (a model neither the provider nor the
     * price table prices).
     */
    cost: number | null;
    /** USD for the session so far; null when any of its model calls' cost is unknown. */
    totalCost: number | null;
}

export type StopReason = 'end_turn' | 'cancelled' | 'max_turns' | 'refusal' | 'max_tokens' | 'error';
export const STOP_REASONS: readonly StopReason[] = ['end_turn', 'cancelled', 'max_turns', 'refusal', 'max_tokens', 'error'];

export interface Usage {
    inputTokens: number;
    outputTokens: number;
}

export interface ListParams {
    limit?: number | null;
    /** nextCursor of the previous page. */
    cursor?: string | null;
    /** A folder (path or file:// URI): only the sessions started in it. Omitted: all. */
    workspace?: string | null;
}

export interface ListResult {
    sessions: SessionSummary[];
    nextCursor?: string | null;
}

export interface SessionSummary {
    sessionId: string;
    title: string;
    /** ISO 8601. */
    createdAt: string;
    updatedAt: string;
    turns: number;
    head: number;
    /** The folder the session was started in; "" when not recorded. */
    workspace?: string;
}

export interface SessionParams {
    sessionId: string;
}

export interface ResumeResult {
    sessionId: string;
    head: number;
    turns: number;
    /** USD for the session so far; null when any of its model calls' cost is unknown. */
    totalCost?: number | null;
}

export interface HistoryParams {
    sessionId: string;
    limit?: number | null;
}

export interface HistoryResult {
    /** OpenAI chat-format messages. */
    messages: Record<string, unknown>[];
}

export interface CheckpointsResult {
    checkpoints: CheckpointInfo[];
}

export interface CheckpointInfo {
    seq: number;
    prompt: string;
    createdAt: string;
    /** Files changed by the turn this prompt started. */
    files: string[];
    /** Of `files`, those a shell command changed (not the agent's own file tools). */
    fromCommands?: string[];
    /**
     * Paths a command changed that were not captured (ignored, or over the size
     * cap): a restore cannot put them back.
     */
    notCaptured?: string[];
    /**
     * MCP tools the turn called: their changes inside the workspace are in
     * `files`.
     */
    externalTools?: string[];
    /**
     * What the turn ran outside the sandbox (a command's text, an MCP tool's
     * name): under the `full` policy, by the user's leave after the sandbox stopped
     * it, or an MCP server not sandboxed. What it changed outside the workspace no
     * restore can undo. Empty: everything ran confined, so nothing outside the
     * places the sandbox lets it write can have changed. Sessions logged before the
     * sandbox name every command and MCP tool.
     */
    unconfined?: string[];
    /**
     * 1 for the session's first prompt, 2 for the next ...: what a person calls it
     * (seq is what the methods take).
     */
    ordinal?: number;
    /** `"3 · add a test"`: the ordinal and the prompt, cut to one short line. */
    label?: string;
}

export interface RestoreParams {
    sessionId: string;
    /** A checkpoint's seq: the session returns to just before that prompt. */
    seq: number;
    files?: boolean;
    conversation?: boolean;
    /** Overwrite files changed since the session last wrote them (conflicts). */
    force?: boolean;
    /**
     * Write nothing: the result's `preview` says what the restore would do. A
     * restore with the same `paths` and `force` then writes exactly that.
     */
    dryRun?: boolean;
    /**
     * Only these files (workspace-relative, as `session/changes` names them) are
     * put back, the others left as they are; the conversation rewinds all the same.
     * Each must be a file the session changed since the checkpoint.
     */
    paths?: string[] | null;
}

export interface RestoreResult {
    restoredFiles: string[];
    removedEvents: number;
    /** Open buffers the editor did not bring back (see docs/protocol.md). */
    unrevertedBuffers?: string[];
    /**
     * Files left as they are: changed since the session last wrote them (by the
     * user, a formatter, another tool), before or while the restore ran.
     */
    conflicts?: string[];
    /**
     * Paths the later turns' commands changed that were not captured, so were not
     * put back.
     */
    notCaptured?: string[];
    /**
     * What the later turns ran outside the sandbox (commands, MCP tools): what it
     * changed outside the workspace was not undone (as `CheckpointInfo.unconfined`).
     */
    unconfined?: string[];
    /**
     * Files the editor did not write (it refused or failed; ACP clients, which
     * write the files), each with its reason: left as they are.
     */
    notRestored?: Record<string, string>;
    /** Of `removedEvents`, the prompts and answers: what to tell a person. */
    messagesRemoved?: number;
    /**
     * With `dryRun`: what the restore would do (nothing else in this result is
     * then set).
     */
    preview?: RestorePreview | null;
}

/** What a restore would do; nothing was written. */
export interface RestorePreview {
    files: PreviewFile[];
    /** Prompts and answers the conversation would lose. */
    messagesRemoved: number;
    checkpoint: CheckpointInfo;
    /** Paths later commands changed without capture: no restore puts them back. */
    notCaptured?: string[];
    /**
     * What later turns ran outside the sandbox: what it changed outside the
     * workspace the restore leaves as it is.
     */
    unconfined?: string[];
}

/**
 * A file a restore would change: `before` is what it holds now (an open
 * buffer's unsaved text, where there is one), `after` what the restore writes,
 * `diff` the change the restore makes.
 */
export interface PreviewFile {
    /** Workspace-relative, "/"-separated. */
    path: string;
    action: FileAction;
    /** Not text (not UTF-8, or holds a NUL byte): no diff, no texts. */
    binary: boolean;
    /**
     * Unified diff (`a/`/`b/` headers, `/dev/null` for an absent side, 3 lines
     * of context); "" when binary or a rename that kept the content.
     */
    diff: string;
    /** Lines the diff adds. */
    added: number;
    /** Lines the diff removes. */
    removed: number;
    /** The whole text before; null when absent, binary or over 1 MiB. */
    before: string | null;
    /** The whole text after; null when absent, binary or over 1 MiB. */
    after: string | null;
    /**
     * What changed it: the agent's file tools (edit), a shell command, an MCP tool,
     * or several of them (mixed).
     */
    source: ChangeSource;
    /** For `renamed`: the path the content was at. */
    oldPath?: string | null;
    /**
     * The user (or another program) changed the file since the agent last did: the
     * restore keeps it unless `force`.
     */
    conflict?: boolean;
    /**
     * For a conflict: the agent's last text to what the file holds now, i.e. the
     * user's change a forced restore would discard (null: binary).
     */
    userDiff?: string | null;
    /** The agent's last text of the file (null: absent, binary, or never written). */
    agentText?: string | null;
}

export type FileAction = 'added' | 'modified' | 'deleted' | 'renamed';
export const FILE_ACTIONS: readonly FileAction[] = ['added', 'modified', 'deleted', 'renamed'];

export type ChangeSource = 'edit' | 'command' | 'mcp' | 'mixed';
export const CHANGE_SOURCES: readonly ChangeSource[] = ['edit', 'command', 'mcp', 'mixed'];

export interface ChangesParams {
    sessionId: string;
    /** A checkpoint's seq: the changes of the turn its prompt started. */
    seq?: number | null;
    /** A checkpoint's seq: the net change from just before that prompt ... */
    fromSeq?: number | null;
    /** ... to just before this checkpoint's prompt (omitted: to now). */
    toSeq?: number | null;
}

export interface ChangesResult {
    /**
     * One per file changed, in the order first changed. Neither seq nor fromSeq:
     * the last turn's.
     */
    files: FileDiff[];
}

/** One file's change, as the session recorded it. */
export interface FileDiff {
    /** Workspace-relative, "/"-separated. */
    path: string;
    action: FileAction;
    /** Not text (not UTF-8, or holds a NUL byte): no diff, no texts. */
    binary: boolean;
    /**
     * Unified diff (`a/`/`b/` headers, `/dev/null` for an absent side, 3 lines
     * of context); "" when binary or a rename that kept the content.
     */
    diff: string;
    /** Lines the diff adds. */
    added: number;
    /** Lines the diff removes. */
    removed: number;
    /** The whole text before; null when absent, binary or over 1 MiB. */
    before: string | null;
    /** The whole text after; null when absent, binary or over 1 MiB. */
    after: string | null;
    /**
     * What changed it: the agent's file tools (edit), a shell command, an MCP tool,
     * or several of them (mixed).
     */
    source: ChangeSource;
    /** For `renamed`: the path the content was at. */
    oldPath?: string | null;
}

export interface RevertFilesParams {
    sessionId: string;
    /** The checkpoint whose turn's changes are undone. */
    seq: number;
    /** Files that turn changed: each goes back to its content before the turn. */
    paths: string[];
    /** Overwrite files changed since the session last wrote them (conflicts). */
    force?: boolean;
    /** Write nothing: the result's `preview` says what it would do. */
    dryRun?: boolean;
}

export interface UndoRestoreParams {
    sessionId: string;
    /**
     * Also take back files changed since the restore wrote them (they are kept
     * otherwise, listed in `conflicts`).
     */
    force?: boolean;
}

export interface UndoRestoreResult {
    restoredFiles: string[];
    restoredEvents: number;
    unrevertedBuffers?: string[];
    /** Files left as they are: changed since the restore wrote them. */
    conflicts?: string[];
    /** Files the editor did not write, each with its reason. */
    notRestored?: Record<string, string>;
    /** Of `restoredEvents`, the prompts and answers: what to tell a person. */
    messagesRestored?: number;
}

export interface CompactParams {
    sessionId: string;
    instructions?: string | null;
}

export interface CompactResult {
    /** Estimated tokens of the history before. */
    before: number;
    /** Estimated tokens of the history the model sees now. */
    after: number;
    /**
     * False when nothing was written: too little to summarise, or a summary that
     * would not have made the history smaller (then before == after).
     */
    compacted?: boolean;
}

export interface ForkParams {
    /** The session to fork; it is left untouched. */
    sessionId: string;
    /**
     * A checkpoint's seq: the fork has the conversation up to just before that
     * prompt. Omitted: the whole conversation.
     */
    seq?: number | null;
    title?: string | null;
}

export interface ForkResult {
    /** The new session. */
    sessionId: string;
}

/** `session/event`: something happened in a running turn or compaction. */
export interface EventParams {
    sessionId: string;
    /**
     * text_delta, user_prompt, assistant_message, tool_call, tool_result,
     * file_snapshot, usage, turn_end, compaction, ...
     */
    kind: string;
    data: Record<string, unknown>;
}

/** `session/requestPermission`: may the agent run this tool? */
export interface PermissionParams {
    sessionId: string;
    tool: string;
    /** external: a tool of an MCP server (`mcp__server__tool`). */
    kind: 'edit' | 'command' | 'external';
    arguments: Record<string, unknown>;
    diff?: string | null;
    /**
     * For an edit of a text file: the whole text the tool would leave there, as the
     * engine's preview computed it (absent when unknown; `diff` still says it).
     */
    proposed?: string | null;
    /**
     * For a command the sandbox stopped: why. Allowing runs it again without the
     * sandbox ("always": that command, from now on).
     */
    sandboxDenial?: string | null;
    options?: Decision[];
}

export type Decision = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
export const DECISIONS: readonly Decision[] = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

export interface PermissionResult {
    outcome: Decision;
}
