"""Params and results of the ``session/*`` methods, as attrs classes.

Field names are snake_case here and camelCase on the wire (see ``converter``).
The docstring of each field is what docs/protocol.md and the JSON Schema say.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

# The engine's own, on the wire as they are (the schema and TypeScript name them too).
from ..service import ContextItem
from ..session.approval import Approval, Decision

ModelLimit = float | str | dict[str, float] | None
SandboxOption = str | dict[str, Any] | None
"""A model time limit: a number, or per provider (checked by the engine)."""

StopReason = Literal["end_turn", "cancelled", "max_turns", "refusal", "max_tokens", "error"]

FileAction = Literal["added", "modified", "deleted", "renamed"]
ChangeSource = Literal["edit", "command", "mcp", "mixed"]


@attrs.define
class InitializationOptions:
    """``initializationOptions`` of ``initialize``; every field optional."""

    store: str | None = None
    """Session store URL: file:///dir, a directory, sqlite:///x.db or memory:.
    Default: the user data folder."""
    model: str | None = None
    """Model as provider/model (openai/gpt-4.1-mini) or scripted:PATH."""
    approval: Approval = "ask"
    """Which tool calls need the user's permission."""
    mcp_servers: list[dict[str, Any]] = attrs.field(factory=list)
    """MCP servers whose tools every session's turns are offered, in ACP's
    McpServer shape: ``{"name", "command", "args", "env": [{"name", "value"}]}``
    or ``{"type": "http", "name", "url", "headers": [{"name", "value"}]}``."""
    shell_environment: dict[str, Any] | None = None
    """What of the server's environment commands and MCP servers see:
    ``{"include": [patterns kept], "exclude": [patterns removed], "set": {NAME:
    value}}``. Default: all of it but names like ``*KEY*``, ``*TOKEN*``,
    ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*`` and the model providers' keys."""
    sandbox: SandboxOption = None
    """How commands and stdio MCP servers are confined: ``"workspace-write"`` (the
    default: write the workspace and a private temp, read all but secret places, no
    network), ``"read-only"``, ``"full"`` (no sandbox), or ``{"mode", "writable",
    "deny", "network", "gitWritable", "limits": {"processes", "memoryBytes",
    "fileSizeBytes", "cpuSeconds"}, "fallback": "refuse" | "full"}`` (docs/security.md).
    Unset: AGENT_HOST_SANDBOX, else workspace-write."""
    model_first_byte_timeout: ModelLimit = None
    """Seconds one attempt at a model call may wait for the response to begin before
    it is retried (and the user told). A number, or per provider: ``{"*": 15,
    "ollama": 90}`` or ``"15,ollama=90"``. Default 15 (ollama 50); with the retries,
    a stalled endpoint is an error within 60 s. Unset: AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT."""
    model_timeout: ModelLimit = None
    """Seconds a model call may send nothing but keep-alives (the first token
    included) before the turn fails with a model timeout. Default 120 (unset:
    AGENT_HOST_MODEL_TIMEOUT); per provider as for modelFirstByteTimeout."""
    model_total_timeout: ModelLimit = None
    """Seconds one model call may take in all, retries included. Default 1200 (unset:
    AGENT_HOST_MODEL_TOTAL_TIMEOUT); per provider as for modelFirstByteTimeout."""
    model_retries: ModelLimit = None
    """How many times a model call that failed before answering is tried again.
    Default 2 (ollama 0; unset: AGENT_HOST_MODEL_RETRIES); per provider as for
    modelFirstByteTimeout."""


@attrs.define
class NewParams:
    model: str | None = None
    """The session's model (default: the server's); its turns use it."""
    title: str | None = None
    mcp_servers: list[dict[str, Any]] | None = None
    """MCP servers for this session's turns, in ACP's McpServer shape, instead of
    the server's (initializationOptions.mcpServers). Held by this server, never
    stored: give them again on the session in another server."""


@attrs.define
class NewResult:
    session_id: str


@attrs.define
class SendParams:
    prompt: str
    session_id: str | None = None
    """Omitted: a new session."""
    model: str | None = None
    """This turn's model, instead of the one the session was started with."""
    context: list[ContextItem] = attrs.field(factory=list)
    """Logged beside the prompt (``user_prompt``'s ``context``), out of titles; the
    model reads it appended to the prompt as ``<context uri=...>`` blocks."""


@attrs.define
class Usage:
    input_tokens: int
    output_tokens: int


@attrs.define
class SendResult:
    session_id: str
    checkpoint: int
    """Seq of this turn's prompt; session/restore to it undoes the turn."""
    stop_reason: StopReason
    text: str
    usage: Usage
    cost: float | None
    """USD for this turn; null when unknown (a model neither the provider nor the
    price table prices)."""
    total_cost: float | None
    """USD for the session so far; null when any of its model calls' cost is unknown."""


@attrs.define
class SessionParams:
    session_id: str


@attrs.define
class UndoRestoreParams:
    session_id: str
    force: bool = False
    """Also take back files changed since the restore wrote them (they are kept
    otherwise, listed in ``conflicts``)."""


@attrs.define
class ListParams:
    limit: int | None = None
    cursor: str | None = None
    """nextCursor of the previous page."""
    workspace: str | None = None
    """A folder (path or file:// URI): only the sessions started in it. Omitted: all."""


@attrs.define
class SessionSummary:
    session_id: str
    title: str
    created_at: str
    """ISO 8601."""
    updated_at: str
    turns: int
    head: int
    workspace: str = ""
    """The folder the session was started in; "" when not recorded."""


@attrs.define
class ListResult:
    sessions: list[SessionSummary]
    next_cursor: str | None = None


@attrs.define
class ResumeResult:
    session_id: str
    head: int
    turns: int
    total_cost: float | None = None
    """USD for the session so far; null when any of its model calls' cost is unknown."""


@attrs.define
class ForkParams:
    session_id: str
    """The session to fork; it is left untouched."""
    seq: int | None = None
    """A checkpoint's seq: the fork has the conversation up to just before that
    prompt. Omitted: the whole conversation."""
    title: str | None = None


@attrs.define
class ForkResult:
    session_id: str
    """The new session."""


@attrs.define
class HistoryParams:
    session_id: str
    limit: int | None = None


@attrs.define
class HistoryResult:
    messages: list[dict[str, Any]]
    """OpenAI chat-format messages."""


@attrs.define
class CheckpointInfo:
    seq: int
    prompt: str
    created_at: str
    files: list[str]
    """Files changed by the turn this prompt started."""
    from_commands: list[str] = attrs.field(factory=list)
    """Of ``files``, those a shell command changed (not the agent's own file tools)."""
    not_captured: list[str] = attrs.field(factory=list)
    """Paths a command changed that were not captured (ignored, or over the size
    cap): a restore cannot put them back."""
    external_tools: list[str] = attrs.field(factory=list)
    """MCP tools the turn called: their changes inside the workspace are in
    ``files``."""
    unconfined: list[str] = attrs.field(factory=list)
    """What the turn ran outside the sandbox (a command's text, an MCP tool's
    name): under the ``full`` policy, by the user's leave after the sandbox stopped
    it, or an MCP server not sandboxed. What it changed outside the workspace no
    restore can undo. Empty: everything ran confined, so nothing outside the
    places the sandbox lets it write can have changed. Sessions logged before the
    sandbox name every command and MCP tool."""
    ordinal: int = 0
    """1 for the session's first prompt, 2 for the next ...: what a person calls it
    (seq is what the methods take)."""
    label: str = ""
    """``"3 · add a test"``: the ordinal and the prompt, cut to one short line."""


@attrs.define
class CheckpointsResult:
    checkpoints: list[CheckpointInfo]


@attrs.define
class RestoreParams:
    session_id: str
    seq: int
    """A checkpoint's seq: the session returns to just before that prompt."""
    files: bool = True
    conversation: bool = True
    force: bool = False
    """Overwrite files changed since the session last wrote them (conflicts)."""
    dry_run: bool = False
    """Write nothing: the result's ``preview`` says what the restore would do. A
    restore with the same ``paths`` and ``force`` then writes exactly that."""
    paths: list[str] | None = None
    """Only these files (workspace-relative, as ``session/changes`` names them) are
    put back, the others left as they are; the conversation rewinds all the same.
    Each must be a file the session changed since the checkpoint."""


@attrs.define
class FileDiff:
    """One file's change, as the session recorded it."""

    path: str
    """Workspace-relative, "/"-separated."""
    action: FileAction
    binary: bool
    """Not text (not UTF-8, or holds a NUL byte): no diff, no texts."""
    diff: str
    """Unified diff (``a/``/``b/`` headers, ``/dev/null`` for an absent side, 3 lines
    of context); "" when binary or a rename that kept the content."""
    added: int
    """Lines the diff adds."""
    removed: int
    """Lines the diff removes."""
    before: str | None
    """The whole text before; null when absent, binary or over 1 MiB."""
    after: str | None
    """The whole text after; null when absent, binary or over 1 MiB."""
    source: ChangeSource
    """What changed it: the agent's file tools (edit), a shell command, an MCP tool,
    or several of them (mixed)."""
    old_path: str | None = None
    """For ``renamed``: the path the content was at."""


@attrs.define
class PreviewFile(FileDiff):
    """A file a restore would change: ``before`` is what it holds now (an open
    buffer's unsaved text, where there is one), ``after`` what the restore writes,
    ``diff`` the change the restore makes."""

    conflict: bool = False
    """The user (or another program) changed the file since the agent last did: the
    restore keeps it unless ``force``."""
    user_diff: str | None = None
    """For a conflict: the agent's last text to what the file holds now, i.e. the
    user's change a forced restore would discard (null: binary)."""
    agent_text: str | None = None
    """The agent's last text of the file (null: absent, binary, or never written)."""


@attrs.define
class RestorePreview:
    """What a restore would do; nothing was written."""

    files: list[PreviewFile]
    messages_removed: int
    """Prompts and answers the conversation would lose."""
    checkpoint: CheckpointInfo
    not_captured: list[str] = attrs.field(factory=list)
    """Paths later commands changed without capture: no restore puts them back."""
    unconfined: list[str] = attrs.field(factory=list)
    """What later turns ran outside the sandbox: what it changed outside the
    workspace the restore leaves as it is."""


@attrs.define
class ChangesParams:
    session_id: str
    seq: int | None = None
    """A checkpoint's seq: the changes of the turn its prompt started."""
    from_seq: int | None = None
    """A checkpoint's seq: the net change from just before that prompt ..."""
    to_seq: int | None = None
    """... to just before this checkpoint's prompt (omitted: to now)."""


@attrs.define
class ChangesResult:
    files: list[FileDiff]
    """One per file changed, in the order first changed. Neither seq nor fromSeq:
    the last turn's."""


@attrs.define
class RevertFilesParams:
    session_id: str
    seq: int
    """The checkpoint whose turn's changes are undone."""
    paths: list[str]
    """Files that turn changed: each goes back to its content before the turn."""
    force: bool = False
    """Overwrite files changed since the session last wrote them (conflicts)."""
    dry_run: bool = False
    """Write nothing: the result's ``preview`` says what it would do."""


@attrs.define
class RestoreResult:
    restored_files: list[str]
    removed_events: int
    unreverted_buffers: list[str] = attrs.field(factory=list)
    """Open buffers the editor did not bring back (see docs/protocol.md)."""
    conflicts: list[str] = attrs.field(factory=list)
    """Files left as they are: changed since the session last wrote them (by the
    user, a formatter, another tool), before or while the restore ran."""
    not_captured: list[str] = attrs.field(factory=list)
    """Paths the later turns' commands changed that were not captured, so were not
    put back."""
    unconfined: list[str] = attrs.field(factory=list)
    """What the later turns ran outside the sandbox (commands, MCP tools): what it
    changed outside the workspace was not undone (as ``CheckpointInfo.unconfined``)."""
    not_restored: dict[str, str] = attrs.field(factory=dict)
    """Files the editor did not write (it refused or failed; ACP clients, which
    write the files), each with its reason: left as they are."""
    messages_removed: int = 0
    """Of ``removedEvents``, the prompts and answers: what to tell a person."""
    preview: RestorePreview | None = None
    """With ``dryRun``: what the restore would do (nothing else in this result is
    then set)."""


@attrs.define
class UndoRestoreResult:
    restored_files: list[str]
    restored_events: int
    unreverted_buffers: list[str] = attrs.field(factory=list)
    conflicts: list[str] = attrs.field(factory=list)
    """Files left as they are: changed since the restore wrote them."""
    not_restored: dict[str, str] = attrs.field(factory=dict)
    """Files the editor did not write, each with its reason."""
    messages_restored: int = 0
    """Of ``restoredEvents``, the prompts and answers: what to tell a person."""


@attrs.define
class CompactParams:
    session_id: str
    instructions: str | None = None


@attrs.define
class CompactResult:
    before: int
    """Estimated tokens of the history before."""
    after: int
    """Estimated tokens of the history the model sees now."""
    compacted: bool = True
    """False when nothing was written: too little to summarise, or a summary that
    would not have made the history smaller (then before == after)."""


@attrs.define
class EventParams:
    """``session/event``: something happened in a running turn or compaction."""

    session_id: str
    kind: str
    """text_delta, user_prompt, assistant_message, tool_call, tool_result,
    file_snapshot, usage, turn_end, compaction, ..."""
    data: dict[str, Any]


@attrs.define
class PermissionParams:
    """``session/requestPermission``: may the agent run this tool?"""

    session_id: str
    tool: str
    kind: Literal["edit", "command", "external"]
    """external: a tool of an MCP server (``mcp__server__tool``)."""
    arguments: dict[str, Any]
    diff: str | None = None
    proposed: str | None = None
    """For an edit of a text file: the whole text the tool would leave there, as the
    engine's preview computed it (absent when unknown; ``diff`` still says it)."""
    sandbox_denial: str | None = None
    """For a command the sandbox stopped: why. Allowing runs it again without the
    sandbox ("always": that command, from now on)."""
    options: list[Decision] = attrs.field(
        factory=lambda: ["allow_once", "allow_always", "reject_once", "reject_always"]
    )


@attrs.define
class PermissionResult:
    outcome: Decision
