"""Checkpoints and what a restore must put back, folded from a session's timeline
(its events as restores left them, see :mod:`.timeline`)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .errors import AgentHostError, CheckpointNotFound
from .events import (
    CaptureEnded,
    CaptureStarted,
    Event,
    FileSnapshot,
    Restore,
    RestoreApplied,
    RestoreUndone,
    ToolCall,
    ToolResult,
    TurnEnd,
    UncapturedChanges,
    UserPrompt,
)

EXTERNAL_PREFIX = "mcp__"
"""What the model's name of an MCP server's tool starts with."""
COMMAND_TOOL = "run_command"


class NothingToUndo(AgentHostError):
    """undo_restore on a session whose last change is not a restore."""


@attrs.define
class Checkpoint:
    """A user prompt the session can be restored to (to just before it)."""

    seq: int
    prompt: str
    created_at: float
    files: list[str]
    """Files changed by the turn this prompt started."""
    from_commands: list[str] = attrs.field(factory=list)
    """Of ``files``, those a shell command changed."""
    not_captured: list[str] = attrs.field(factory=list)
    """Paths the turn's commands changed that were not captured."""
    external_tools: list[str] = attrs.field(factory=list)
    """MCP tools the turn called (``mcp__server__tool``): what they changed in the
    workspace is in ``files``; what they changed elsewhere no restore can undo."""
    unconfined: list[str] = attrs.field(factory=list)
    """What the turn ran outside the sandbox -- a command's text, an MCP tool's
    name: a command under ``full`` or run unconfined by the user's leave, a tool of
    an MCP server not sandboxed -- whose changes outside the workspace no restore
    can undo. Empty: everything ran confined, so nothing outside the workspace's
    writable places can have changed. A log from before the sandbox names every
    command and MCP tool (it cannot tell)."""
    ordinal: int = 0
    """Its place among the session's checkpoints, 1 for the first prompt (as the
    conversation stands: a restore renumbers the ones after it)."""


def checkpoints(events: Sequence[Event]) -> list[Checkpoint]:
    out: list[Checkpoint] = []
    current: Checkpoint | None = None
    runs = _Runs()
    for event in events:
        match event:
            case UserPrompt():
                current = Checkpoint(event.seq, event.text, event.ts, [], ordinal=len(out) + 1)
                out.append(current)
            case Restore() | RestoreUndone():
                current = None  # what follows is the restore's doing, not a turn's
            case FileSnapshot() if current:
                if event.path not in current.files:
                    current.files.append(event.path)
                if event.by_command and event.path not in current.from_commands:
                    current.from_commands.append(event.path)
            case ToolCall() if current:
                if event.name.startswith(EXTERNAL_PREFIX):
                    if event.name not in current.external_tools:
                        current.external_tools.append(event.name)
                runs.called(event, current.unconfined)
            case ToolResult():
                runs.answered(event)
            case UncapturedChanges() if current:
                current.not_captured += [p for p in event.paths if p not in current.not_captured]
    runs.unanswered()
    return out


def unconfined_since(events: Sequence[Event], seq: int) -> list[str]:
    """What the turns at or after ``seq`` ran outside the sandbox (as
    :attr:`Checkpoint.unconfined`): what it changed outside the workspace a
    restore to ``seq`` leaves as it is."""
    found: list[str] = []
    runs = _Runs()
    for event in events:
        if event.seq < seq:
            continue
        match event:
            case ToolCall():
                runs.called(event, found)
            case ToolResult():
                runs.answered(event)
    runs.unanswered()
    return found


def runs_something(call: ToolCall) -> str | None:
    """How ``unconfined`` names a call that runs something the sandbox may confine
    -- a command by its text, an MCP tool by its name; None for a tool that runs
    nothing (the agent's own file tools)."""
    if call.name.startswith(EXTERNAL_PREFIX):
        return call.name
    if call.name == COMMAND_TOOL:
        command = call.arguments.get("command")
        return command if isinstance(command, str) else call.name
    return None


class _Runs:
    """Calls that run something, waiting for their result to say whether it ran
    unconfined; a call with no result (a turn cut off, or still running) may have."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[str, list[str]]] = {}

    def called(self, call: ToolCall, into: list[str]) -> None:
        name = runs_something(call)
        if name is not None:
            self._open[call.call_id] = (name, into)

    def answered(self, result: ToolResult) -> None:
        name, into = self._open.pop(result.call_id, (None, None))
        # None: not recorded (older logs, a cancelled call): it may have.
        if name is not None and into is not None and result.unconfined is not False:
            _add(into, name)

    def unanswered(self) -> None:
        for name, into in self._open.values():
            _add(into, name)
        self._open.clear()


def _add(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)


def earliest_changes(events: Sequence[Event], seq: int) -> dict[str, tuple[FileSnapshot, bool]]:
    """Per path changed at or after ``seq``: its first snapshot there, and whether
    that snapshot goes back in time -- a jump that returned the file to an earlier
    point (a restore that took the conversation back, or an undo), whose ``after``
    (not ``before``) is its content at ``seq``, since nothing touched the file
    between ``seq`` and the point the jump returned it to. A files-only restore's
    jump (``conversation: false``: reverting files) does not: the file held its
    ``before`` until then."""
    first: dict[str, tuple[FileSnapshot, bool]] = {}
    back = True
    for event in events:
        match event:
            case Restore():
                back = event.conversation or event.truncation is not None
            case RestoreUndone():
                back = True
            case FileSnapshot() if event.seq >= seq and event.path not in first:
                first[event.path] = (event, event.jump and back)
    return first


def files_to_restore(events: Sequence[Event], seq: int) -> dict[str, str | None]:
    """Per path changed at or after ``seq``: its content (a blob id, None for absent)
    at that moment, which is what restoring to ``seq`` puts back (see
    :func:`earliest_changes`)."""
    return {
        path: change.after if back else change.before
        for path, (change, back) in earliest_changes(events, seq).items()
    }


def executables_to_restore(events: Sequence[Event], seq: int) -> dict[str, bool | None]:
    """Per path changed at or after ``seq``: its owner-exec bit at that moment, where
    the snapshot recorded it (taken from the same snapshot as :func:`files_to_restore`)."""
    return {
        path: change.executable_after if back else change.executable_before
        for path, (change, back) in earliest_changes(events, seq).items()
    }


def executables_left(events: Sequence[Event]) -> dict[str, bool]:
    """Per path: the owner-exec bit the session last recorded for it, where it did."""
    bits: dict[str, bool] = {}
    for event in events:
        if type(event) is FileSnapshot and event.executable_after is not None:
            bits[event.path] = event.executable_after
    return bits


def not_captured_since(events: Sequence[Event], seq: int) -> list[str]:
    """Paths commands changed at or after ``seq`` without capture: a restore to
    ``seq`` cannot put them back."""
    paths: dict[str, None] = {}
    for event in events:
        if event.seq >= seq and type(event) is UncapturedChanges:
            paths.update(dict.fromkeys(event.paths))
    return list(paths)


def buffers_to_restore(events: Sequence[Event], seq: int) -> dict[str, str | None]:
    """Per path changed at or after ``seq``: an open buffer's unsaved text (a blob id)
    at that moment, None when the buffer matched the file (or none was open).

    Taken from the same snapshot as :func:`files_to_restore`. A jump back records
    the buffer as it was before the jump, not the one it left, so for it it is
    None: the buffer follows the file.
    """
    return {
        path: None if back else change.buffer_before
        for path, (change, back) in earliest_changes(events, seq).items()
    }


def left_by_session(events: Sequence[Event]) -> dict[str, tuple[str | None, str | None]]:
    """Per path the session changed: what it last left there, as (the file's blob,
    an open buffer's unsaved text as a blob or None).

    That is the last snapshot's ``after`` -- and its ``buffer_after``: for a
    restore's jump the unsaved text it gave the buffer, for a turn's record of what
    an editor's write left, the text the editor holds unsaved -- except where the
    restore kept the file as it was.
    A file that is not as the session left it was changed by someone else.
    """
    left: dict[str, tuple[str | None, str | None]] = {}
    replaced: dict[str, tuple[str | None, str | None] | None] = {}  # by the open intent
    for event in events:
        match event:
            case FileSnapshot():
                if event.jump:
                    replaced.setdefault(event.path, left.get(event.path))
                left[event.path] = (event.after, event.buffer_after)
            case RestoreApplied():
                for path in event.kept:  # not written: what was there before stays
                    before = replaced.get(path)
                    if before is None:
                        left.pop(path, None)
                    else:
                        left[path] = before
                replaced = {}
            case Restore() | RestoreUndone():
                replaced = {}
    return left


def check_checkpoint(events: Sequence[Event], session_id: str, seq: int) -> UserPrompt:
    for event in events:
        if event.seq == seq and type(event) is UserPrompt:
            return event
    prompts = [e.seq for e in events if type(e) is UserPrompt]
    raise CheckpointNotFound(
        f"session {session_id!r} has no prompt at seq {seq}; "
        f"its checkpoints are at seqs {prompts or 'none'}"
    )


def last_restore(events: Sequence[Event]) -> tuple[Restore, list[FileSnapshot]]:
    """The restore that ``undo_restore`` would undo, and the file changes it made.

    Only a restore with nothing after it but its own snapshots (and the mark that
    they were written) can be undone: undoing one the conversation has moved on
    from would discard the new turns. The snapshots that follow a
    conversation-only restore are not its changes but the removed turns' ones,
    carried over (their edits are still on disk).
    """
    tail: list[FileSnapshot] = []
    for event in reversed(events):
        if type(event) is FileSnapshot:
            tail.append(event)
            continue
        if type(event) is RestoreApplied:
            continue
        if type(event) is Restore:
            return event, list(reversed(tail)) if event.files else []
        break
    raise NothingToUndo(
        "the session's last change is not a restore, so there is nothing to undo; "
        "to go back, restore to an earlier checkpoint (that too can be undone)"
    )


def pending_intent(events: Sequence[Event]) -> tuple[Event, list[FileSnapshot]] | None:
    """A restore or undo at the log's tail whose files are not all written yet:
    the intent and its jumps, or None.

    Every operation finishes such an intent before anything else, so one can
    only be the last thing in the log: its jumps with no RestoreApplied after.
    """
    jumps: list[FileSnapshot] = []
    for event in reversed(events):
        if type(event) is FileSnapshot and event.jump:
            jumps.append(event)
            continue
        if jumps and (type(event) is Restore or type(event) is RestoreUndone):
            return event, jumps[::-1]
        return None
    return None


def pending_capture(events: Sequence[Event]) -> CaptureStarted | None:
    """A command's capture a crash cut off: its CaptureStarted with no CaptureEnded
    after it, or None.

    Every operation finishes such a capture before anything else, so one can only
    be in the last turn: the search stops at the last prompt or restore.
    """
    for event in reversed(events):
        match event:
            case CaptureStarted():
                return event
            case CaptureEnded() | UserPrompt() | Restore() | RestoreUndone():
                return None
    return None


def cut_short_writes(events: Sequence[Event]) -> list[str]:
    """The files the last turn's own tools were writing, if a crash ended that turn
    (no TurnEnd): a write killed midway left its temp file beside the file."""
    paths: dict[str, None] = {}
    for event in reversed(events):
        match event:
            case FileSnapshot():
                if not (event.jump or event.by_command):
                    paths[event.path] = None
            case UserPrompt():
                return list(paths)
            case TurnEnd() | Restore() | RestoreUndone():
                return []
    return list(paths)
