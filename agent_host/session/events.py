"""The events a session log is made of.

A session is an append-only log; the model's view of the conversation, the
checkpoint list and the files changed are all folded from it. Each event is an
attrs class with a ``type`` discriminator and serialises to one JSON object:
``{"type": "user_prompt", "seq": 3, "ts": 1764440000.5, "text": "..."}``.

``seq`` and ``ts`` are assigned by the store when the event is appended; an event
built in code carries ``seq=0`` until it has been read back. Events are values:
nothing mutates one after it is built (they are not frozen only because frozen
attrs classes cost 2.5x as much to build, and a resume builds thousands). Events of a type this
version does not know (written by a newer one) are read as :class:`UnknownEvent`
and written back unchanged, never dropped.
"""

from __future__ import annotations

import json
import sys
from typing import Any, ClassVar, final

import attrs
import cattrs
import orjson

from .model import RAW_ARGUMENTS_KEY


@attrs.define(kw_only=True, slots=True)
class Event:
    """Base of every event. ``seq`` and ``ts`` are set by the store.

    Every event type is final: code dispatches on them with ``match`` class patterns,
    which would also match a subclass, where the log means exactly one type.
    """

    type: ClassVar[str] = ""
    seq: int = 0
    ts: float = 0.0


@final
@attrs.define(kw_only=True, slots=True)
class SessionStarted(Event):
    type: ClassVar[str] = "session_started"
    workspace: str | None = None
    model: str | None = None
    title: str | None = None


@final
@attrs.define(kw_only=True, slots=True)
class UserPrompt(Event):
    """One user prompt: the anchor a checkpoint restores to."""

    type: ClassVar[str] = "user_prompt"
    text: str
    model: str | None = None
    """The model chosen for this turn over the session's (``send(model=...)``); the
    turns after it keep it until another is chosen."""
    item: dict[str, Any] | None = None
    """The Responses API item this came as (through ``add_items``), kept verbatim
    so the Agents SDK reads back exactly what it stored; None for our own turns."""
    context: list[dict[str, Any]] | None = None
    """What the user attached (``{"text", "uri"?}`` each: a selection, a file), kept
    apart from ``text`` so titles and the editor's chat show the prompt alone; the
    model gets both (:func:`~agent_host.session.conversation.prompt_content`)."""


@final
@attrs.define(kw_only=True, slots=True)
class AssistantMessage(Event):
    type: ClassVar[str] = "assistant_message"
    text: str
    item: dict[str, Any] | None = None


@final
@attrs.define(kw_only=True, slots=True)
class ToolCall(Event):
    type: ClassVar[str] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    item: dict[str, Any] | None = None


@final
@attrs.define(kw_only=True, slots=True)
class ToolResult(Event):
    type: ClassVar[str] = "tool_result"
    call_id: str
    output: str
    is_error: bool = False
    item: dict[str, Any] | None = None
    unconfined: bool | None = None
    """Whether the call ran something outside the sandbox (a command under ``full``
    or the user's way out, an MCP server not sandboxed): what it did outside the
    workspace no restore can undo. None: not recorded (a log from before the
    sandbox, a cancelled call), read as unconfined for a command or MCP tool."""


@final
@attrs.define(kw_only=True, slots=True)
class InputItem(Event):
    """A Responses API item the conversation has no place for -- reasoning, a
    system or developer message, a type this version does not know -- stored
    through ``add_items`` and given back verbatim by ``get_items``."""

    type: ClassVar[str] = "input_item"
    item: dict[str, Any] = attrs.field(factory=dict)


@final
@attrs.define(kw_only=True, slots=True)
class FileSnapshot(Event):
    """A file about to change: blob ids of its content before and after.

    ``None`` means the file did not exist (before) or was deleted (after).
    ``buffer_before`` keeps an open editor buffer's unsaved text when it differed
    from the disk at the moment of the change. ``jump`` marks a change made by a
    restore or its undo: the file jumped between two points of the session's
    history, so ``after`` (not ``before``) is its content at the earlier point.
    ``buffer_after``, on a jump: the unsaved text the jump gives an open
    buffer of the file (None: the buffer follows the file), so that the jump
    says all a recovery needs to finish it. On a turn's second snapshot of a file
    an editor wrote (``before`` is then the first one's ``after``): what the
    editor holds unsaved, where its write left the buffer unlike the disk.
    """

    type: ClassVar[str] = "file_snapshot"
    path: str
    before: str | None
    after: str | None
    buffer_before: str | None = None
    jump: bool = False
    buffer_after: str | None = None
    by_command: bool = False
    """The change was made by a shell command (captured after it ran), not by the
    agent's own file tools."""
    executable_before: bool | None = None
    """The owner-exec bit before and after, where known (None: not recorded, as
    for the file tools, which keep a file's mode)."""
    executable_after: bool | None = None


@final
@attrs.define(kw_only=True, slots=True)
class UncapturedChanges(Event):
    """Paths a shell command changed that were not captured -- ignored, or over the
    size cap -- so no restore can put them back; reported, never silently left."""

    type: ClassVar[str] = "uncaptured_changes"
    paths: list[str] = attrs.field(factory=list)


@final
@attrs.define(kw_only=True, slots=True)
class CaptureStarted(Event):
    """Write-ahead of a command's capture, logged before the command runs.

    ``index``: the blob of the workspace index as it was then (every file's stat
    and content blob, see :mod:`.capture_log`), so whatever the command changes
    can be found by comparing the disk with it. Until a :class:`CaptureEnded`
    names it, the capture is pending: a crash cut it off, and the next operation
    on the session, in any process, compares and logs what changed first.
    """

    type: ClassVar[str] = "capture_started"
    index: str


@final
@attrs.define(kw_only=True, slots=True)
class CaptureEnded(Event):
    """The capture begun at ``started_seq`` is logged: the file snapshots and
    uncaptured paths appended with this event are all it found."""

    type: ClassVar[str] = "capture_ended"
    started_seq: int


@final
@attrs.define(kw_only=True, slots=True)
class Usage(Event):
    type: ClassVar[str] = "usage"
    input_tokens: int
    output_tokens: int
    cost: float | None = 0.0
    """USD: what the provider reported, else the price table's figure; None when
    neither knows the model (the cost is unknown, never silently zero)."""
    model: str = ""


@final
@attrs.define(kw_only=True, slots=True)
class Compaction(Event):
    """A summary that stands for the events ``first_seq..last_seq`` in the model's view."""

    type: ClassVar[str] = "compaction"
    summary: str
    first_seq: int
    last_seq: int
    tokens_before: int
    tokens_after: int


@final
@attrs.define(kw_only=True, slots=True)
class Restore(Event):
    """The session was returned to the moment just after ``to_seq``.

    The file snapshots (jumps) that follow it in the same append are the files it
    changes, each with its target: the whole restore is decided by this one
    append (see timeline), and :class:`RestoreApplied` follows once every file is
    written. ``truncation``: set only by agent-host 0.1, which cut the log and
    kept the removed events in the store's truncations under that id.
    ``conflicts``: the files it found changed by someone else and leaves as they
    are. Each still has its jump (never written), which records where the restore
    put the file in the session's history: a later restore to an earlier prompt
    reads the file's content at that prompt from it.
    """

    type: ClassVar[str] = "restore"
    to_seq: int
    files: bool = True
    conversation: bool = True
    truncation: int | None = None
    conflicts: list[str] | None = None


@final
@attrs.define(kw_only=True, slots=True)
class RestoreUndone(Event):
    """The restore at ``restore_seq`` was undone: files and conversation are back."""

    type: ClassVar[str] = "restore_undone"
    restore_seq: int


@final
@attrs.define(kw_only=True, slots=True)
class RestoreApplied(Event):
    """Every file of the restore or undo at ``intent_seq`` has been written.

    Until this is logged, the next operation on the session (in any process)
    finishes writing them first. ``kept``: files left as they were because
    something other than the restore changed them meanwhile (neither the content
    the restore found nor the one it was writing).
    """

    type: ClassVar[str] = "restore_applied"
    intent_seq: int
    kept: list[str] = attrs.field(factory=list)


@final
@attrs.define(kw_only=True, slots=True)
class TurnEnd(Event):
    type: ClassVar[str] = "turn_end"
    stop_reason: str


@final
@attrs.define(kw_only=True, slots=True)
class UnknownEvent(Event):
    """An event of a type this version does not know; kept as read."""

    kind: str
    data: dict[str, Any] = attrs.field(factory=dict)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        SessionStarted,
        UserPrompt,
        AssistantMessage,
        ToolCall,
        ToolResult,
        InputItem,
        FileSnapshot,
        UncapturedChanges,
        CaptureStarted,
        CaptureEnded,
        Usage,
        Compaction,
        Restore,
        RestoreUndone,
        RestoreApplied,
        TurnEnd,
    )
}

converter = cattrs.Converter()
_OMITTED_WHEN_NONE = ("item", "model", "conflicts", "context", "unconfined")


def _unstructure_with_type(cls: type[Event]) -> Any:
    # Built on first use, not at import: generating the 14 hooks costs ~8 ms of the
    # server's start-up (P5, docs/performance.md).
    # Rare fields: events without an SDK item or a chosen model do not spell out null.
    omit = cattrs.gen.override(omit_if_default=True)
    overrides: dict[str, cattrs.gen.AttributeOverride] = {
        f.name: omit
        for f in attrs.fields(cls)
        if f.name in _OMITTED_WHEN_NONE and f.default is None
    }
    # mypy cannot tell the field names in ``overrides`` from the function's own flags.
    unstructure = cattrs.gen.make_dict_unstructure_fn(cls, converter, **overrides)  # type: ignore[arg-type]
    type_name = cls.type

    def unstructure_with_type(event: Event) -> dict[str, Any]:
        data = unstructure(event)
        data["type"] = type_name
        return data

    return unstructure_with_type


_EVENT_CLASSES = frozenset(EVENT_TYPES.values())
converter.register_unstructure_hook_factory(
    lambda cls: cls in _EVENT_CLASSES, _unstructure_with_type
)


def _structure(data: dict[str, Any], cls: type[Event]) -> Event:
    """Through cattrs, which ignores fields this version does not know."""
    return converter.get_structure_hook(cls)(data, cls)


def to_dict(event: Event, seq: int | None = None, ts: float | None = None) -> dict[str, Any]:
    """The JSON object for ``event``, optionally stamped with the store's seq and ts."""
    if isinstance(event, UnknownEvent):
        data = dict(event.data)
        data["type"] = event.kind
    else:
        data = converter.unstructure(event)
    data["seq"] = event.seq if seq is None else seq
    data["ts"] = event.ts if ts is None else ts
    return data


def encode(event: Event, seq: int | None = None, ts: float | None = None) -> bytes:
    """One event as compact JSON bytes (no newline).

    Never fails on a value that came from outside (a model's tool arguments, a
    tool's output, a client's prompt): a value orjson cannot write -- an integer
    past 64 bits, a lone surrogate, nesting past 254 levels -- is logged in a form
    it can (:func:`loggable`), rather than losing the turn that carried it.
    """
    try:
        return orjson.dumps(to_dict(event, seq, ts))
    except (orjson.JSONEncodeError, RecursionError):
        # RecursionError: cattrs recurses a few frames a level, so deep nesting
        # that json.loads took can end it before orjson is reached.
        return orjson.dumps(loggable(_shallow_dict(event, seq, ts)), default=str)


def _shallow_dict(event: Event, seq: int | None, ts: float | None) -> dict[str, Any]:
    """:func:`to_dict`, with a field too deep for cattrs kept as it is."""
    if isinstance(event, UnknownEvent):
        return to_dict(event, seq, ts)
    data: dict[str, Any] = {"type": event.type}
    for field in attrs.fields(type(event)):
        value = getattr(event, field.name)
        if value is None and field.name in _OMITTED_WHEN_NONE:
            continue
        try:
            data[field.name] = converter.unstructure(value)
        except RecursionError:
            data[field.name] = value
    data["seq"] = event.seq if seq is None else seq
    data["ts"] = event.ts if ts is None else ts
    return data


_MAX_DEPTH = 200
"""Below orjson's own limit (254) with room for the event's own nesting."""
_INT64 = range(-(2**63), 2**64)
"""The integers orjson writes: int64 and uint64."""


def loggable(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (an event's JSON object) with what orjson cannot write made writable.

    A tool call's arguments become ``{RAW_ARGUMENTS_KEY: <their JSON text>}``, the
    text the model wrote (the stdlib writes any integer), which is what the model
    is shown again (:func:`~.conversation.call_arguments`). Elsewhere an integer
    past 64 bits becomes its digits as a string, a lone surrogate its ``\\udXXX``
    escape, and a value nested too deep its JSON text.
    """
    data = dict(data)
    if data.get("type") == ToolCall.type and isinstance(data.get("arguments"), dict):
        try:
            orjson.dumps(data["arguments"])
        except orjson.JSONEncodeError:
            data["arguments"] = {RAW_ARGUMENTS_KEY: _json_text(data["arguments"])}
    return _writable(data, 0)


def _writable(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if value in _INT64 else _json_text(value)
    if isinstance(value, dict | list | tuple) and depth >= _MAX_DEPTH:
        return _json_text(value)
    if isinstance(value, dict):
        return {_writable(str(k), depth): _writable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_writable(v, depth + 1) for v in value]
    return value


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, default=str)  # ensure_ascii: surrogates come out escaped
    except (ValueError, RecursionError) as exc:
        # Past Python's limit on an integer's digits, or its recursion limit.
        return f"(not recordable: {type(exc).__name__})"


def from_dict(data: dict[str, Any]) -> Event:
    """The event for a JSON object read from a log; unknown types pass through.

    ``data`` is consumed. The fast path builds the class from the object's keys
    directly, which is what this version writes; an object with keys the class
    does not have (a field added by a newer version) goes through the cattrs
    converter, which ignores them.
    """
    kind = data.pop("type", None)
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        seq = data.pop("seq", 0)
        ts = data.pop("ts", 0.0)
        return UnknownEvent(seq=seq, ts=ts, kind=str(kind), data=data)
    try:
        return cls(**data)
    except TypeError:
        return _structure(data, cls)


def from_dicts(objects: list[dict[str, Any]]) -> list[Event]:
    """:func:`from_dict` for many objects: one call per log window, not per event.

    A resumed session keeps every event in memory, so values the parser made
    afresh for each event are shared where they are equal: the timestamp of the
    events of one append, a tool call's id with its result's, tool names.
    """
    types = EVENT_TYPES
    events: list[Event] = []
    append = events.append
    last_ts: Any = None
    call_ids: dict[str, str] = {}
    for data in objects:
        kind = data.pop("type", None)
        cls = types.get(kind)
        if cls is None:
            data["type"] = kind  # an unknown event: from_dict keeps it whole
            append(from_dict(data))
            continue
        ts = data.get("ts")
        if ts == last_ts:
            data["ts"] = last_ts
        else:
            last_ts = ts
        if cls is ToolCall or cls is ToolResult:
            call_id = data.get("call_id")
            if isinstance(call_id, str):
                data["call_id"] = call_ids.setdefault(call_id, call_id)
            name = data.get("name")
            if isinstance(name, str):
                data["name"] = sys.intern(name)
        try:
            append(cls(**data))
        except TypeError:
            append(_structure(data, cls))
    return events


def decode(raw: bytes | str) -> Event:
    return from_dict(orjson.loads(raw))


def stamp(event: Event, seq: int, ts: float) -> Event:
    """``event`` as the store recorded it."""
    return attrs.evolve(event, seq=seq, ts=ts)
