"""Checkpoints and what a restore must put back, folded from a session's events."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .errors import AgentHostError, CheckpointNotFound
from .events import Event, FileSnapshot, Restore, UserPrompt


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
    for event in events:
        if type(event) is UserPrompt:
            out.append(Checkpoint(event.seq, event.text, event.ts, []))
        elif type(event) is FileSnapshot and out and event.path not in out[-1].files:
            out[-1].files.append(event.path)
    return out


def files_to_restore(events: Sequence[Event], seq: int) -> dict[str, FileSnapshot]:
    """Per path changed at or after ``seq``, its earliest snapshot: the content to restore."""
    earliest: dict[str, FileSnapshot] = {}
    for event in events:
        if event.seq >= seq and type(event) is FileSnapshot and event.path not in earliest:
            earliest[event.path] = event
    return earliest


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

    Only a restore with nothing after it but its own snapshots can be undone:
    undoing one the conversation has moved on from would discard the new turns.
    """
    tail: list[FileSnapshot] = []
    for event in reversed(events):
        if type(event) is FileSnapshot:
            tail.append(event)
            continue
        if type(event) is Restore:
            return event, list(reversed(tail))
        break
    raise NothingToUndo(
        "the session's last change is not a restore, so there is nothing to undo; "
        "to go back, restore to an earlier checkpoint (that too can be undone)"
    )
