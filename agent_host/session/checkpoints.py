"""Checkpoints and what a restore must put back, folded from a session's timeline
(its events as restores left them, see :mod:`.timeline`)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .errors import AgentHostError, CheckpointNotFound
from .events import Event, FileSnapshot, Restore, RestoreApplied, RestoreUndone, UserPrompt


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


def checkpoints(events: Sequence[Event]) -> list[Checkpoint]:
    out: list[Checkpoint] = []
    current: Checkpoint | None = None
    for event in events:
        kind = type(event)
        if kind is UserPrompt:
            current = Checkpoint(event.seq, event.text, event.ts, [])
            out.append(current)
        elif kind is Restore or kind is RestoreUndone:
            current = None  # what follows is the restore's doing, not a turn's
        elif kind is FileSnapshot and current and event.path not in current.files:
            current.files.append(event.path)
    return out


def files_to_restore(events: Sequence[Event], seq: int) -> dict[str, str | None]:
    """Per path changed at or after ``seq``: its content (a blob id, None for absent)
    at that moment, which is what restoring to ``seq`` puts back.

    That is the earliest change's ``before`` -- or its ``after`` when the change was
    a restore's jump, since nothing touched the file between ``seq`` and the point
    the jump returned it to.
    """
    content: dict[str, str | None] = {}
    for event in events:
        if event.seq >= seq and type(event) is FileSnapshot and event.path not in content:
            content[event.path] = event.after if event.jump else event.before
    return content


def buffers_to_restore(events: Sequence[Event], seq: int) -> dict[str, str | None]:
    """Per path changed at or after ``seq``: an open buffer's unsaved text (a blob id)
    at that moment, None when the buffer matched the file (or none was open).

    Taken from the same snapshot as :func:`files_to_restore`. A jump records the
    buffer as it was before the jump, not the one it left, so for a jump it is None:
    the buffer follows the file.
    """
    text: dict[str, str | None] = {}
    for event in events:
        if event.seq >= seq and type(event) is FileSnapshot and event.path not in text:
            text[event.path] = None if event.jump else event.buffer_before
    return text


def left_by_session(events: Sequence[Event]) -> dict[str, tuple[str | None, str | None]]:
    """Per path the session changed: what it last left there, as (the file's blob,
    an open buffer's unsaved text as a blob or None).

    That is the last snapshot's ``after`` -- and for a restore's jump, the unsaved
    text it gave the buffer -- except where the restore kept the file as it was.
    A file that is not as the session left it was changed by someone else.
    """
    left: dict[str, tuple[str | None, str | None]] = {}
    replaced: dict[str, tuple[str | None, str | None] | None] = {}  # by the open intent
    for event in events:
        kind = type(event)
        if kind is FileSnapshot:
            if event.jump:
                replaced.setdefault(event.path, left.get(event.path))
            left[event.path] = (event.after, event.buffer_after if event.jump else None)
        elif kind is RestoreApplied:
            for path in event.kept:  # not written: what was there before stays
                before = replaced.get(path)
                if before is None:
                    left.pop(path, None)
                else:
                    left[path] = before
            replaced = {}
        elif kind is Restore or kind is RestoreUndone:
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
