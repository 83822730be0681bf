"""What the session changed, as per-file diffs: one turn's changes, or a checkpoint
range's net change, read from the file snapshots it recorded -- the agent's own
edits and what its commands and MCP tools changed alike.

Per path, the content before (the first snapshot's ``before``) and after (the last
snapshot's ``after``, or what was there before a restore's jump the restore kept)
are compared: a file absent before is ``added``, absent after ``deleted``; a
deleted file whose content reappears, whole, at a path that was added is one
``renamed``. Text is diffed with :mod:`difflib` (``a/``/``b/`` headers, 3 lines of
context); content that is not UTF-8 or holds a NUL byte is binary and not diffed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Literal

import attrs

from . import events as ev
from .blobs import BlobStore
from .checkpoints import EXTERNAL_PREFIX
from .errors import CheckpointNotFound, InvalidArgument

Action = Literal["added", "modified", "deleted", "renamed"]
Source = Literal["edit", "command", "mcp", "mixed"]

WHOLE_TEXT_BYTES = 1 << 20
"""Texts up to this size are given whole beside their diff (an editor's diff view
needs both sides); larger ones only as the diff."""
CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file\n"


@attrs.define
class FileDiff:
    """One file's change between two moments of the session."""

    path: str
    action: Action
    binary: bool
    diff: str
    """Unified diff; "" for a binary file (or a rename that kept the content)."""
    added: int
    removed: int
    before: str | None
    """The whole text before: None when absent, binary or over WHOLE_TEXT_BYTES."""
    after: str | None
    source: Source
    old_path: str | None = None
    """For ``renamed``: where the content was."""


@attrs.define
class FileMove:
    """A path's content (blob ids, None: absent) at two moments, and what moved it."""

    path: str
    before: str | None
    after: str | None
    sources: set[str] = attrs.field(factory=set)


def turn_events(events: Sequence[ev.Event], seq: int, session_id: str) -> list[ev.Event]:
    """The events of the turn the prompt at ``seq`` started: up to the next prompt,
    restore or undo (what follows a restore is its doing, not a turn's)."""
    start = _prompt_index(events, seq, session_id)
    out: list[ev.Event] = []
    for event in events[start:]:
        if out and type(event) in (ev.UserPrompt, ev.Restore, ev.RestoreUndone):
            break
        out.append(event)
    return out


def range_events(
    events: Sequence[ev.Event], session_id: str, from_seq: int, to_seq: int | None = None
) -> list[ev.Event]:
    """The events from the prompt at ``from_seq`` to just before the prompt at
    ``to_seq`` (None: to now)."""
    start = _prompt_index(events, from_seq, session_id)
    end = len(events) if to_seq is None else _prompt_index(events, to_seq, session_id)
    if end < start:
        raise CheckpointNotFound(
            f"the range's end (checkpoint {to_seq}) comes before its start ({from_seq})"
        )
    return list(events[start:end])


def last_prompt(events: Sequence[ev.Event]) -> int | None:
    """The seq of the timeline's last prompt, None when it has none."""
    for event in reversed(events):
        if type(event) is ev.UserPrompt:
            return event.seq
    return None


def _prompt_index(events: Sequence[ev.Event], seq: int, session_id: str) -> int:
    for i, event in enumerate(events):
        if event.seq == seq and type(event) is ev.UserPrompt:
            return i
    prompts = [e.seq for e in events if type(e) is ev.UserPrompt]
    raise CheckpointNotFound(
        f"session {session_id!r} has no prompt at seq {seq}; "
        f"its checkpoints are at seqs {prompts or 'none'}"
    )


def moves(events: Iterable[ev.Event]) -> list[FileMove]:
    """Per path the events changed, in the order first changed: its content before
    the first change and after the last, and what changed it."""
    found: dict[str, FileMove] = {}
    jumped_from: dict[str, str | None] = {}
    tool = ""
    for event in events:
        match event:
            case ev.ToolCall():
                tool = event.name
            case ev.FileSnapshot():
                move = found.get(event.path)
                if move is None:
                    first = event.after if event.jump else event.before
                    move = found[event.path] = FileMove(event.path, first, event.after)
                    if event.jump:
                        jumped_from[event.path] = event.before
                if event.jump:
                    jumped_from[event.path] = event.before
                    move.sources.add("restore")
                else:
                    move.sources.add(_source(event, tool))
                move.after = event.after
            case ev.RestoreApplied():
                for path in event.kept:  # not written: what was there stays
                    if path in jumped_from and path in found:
                        found[path].after = jumped_from[path]
                jumped_from = {}
    return list(found.values())


def source_of(sources: set[str]) -> Source:
    """What changed a file, for the wire: a restore's jump counts as the agent's edit."""
    kinds = {"edit" if s == "restore" else s for s in sources} or {"edit"}
    if len(kinds) > 1:
        return "mixed"
    return kinds.pop()  # type: ignore[return-value]


def _source(snapshot: ev.FileSnapshot, tool: str) -> str:
    if not snapshot.by_command:
        return "edit"
    return "mcp" if tool.startswith(EXTERNAL_PREFIX) else "command"


async def diffs(blobs: BlobStore, found: Sequence[FileMove]) -> list[FileDiff]:
    """Each move as a FileDiff (unchanged ones left out), renames paired."""
    out: list[FileDiff] = []
    for move in found:
        if move.before == move.after:
            continue
        out.append(
            await file_diff(blobs, move.path, move.before, move.after, source_of(move.sources))
        )
    return pair_renames(out, {m.path: m for m in found})


async def file_diff(
    blobs: BlobStore,
    path: str,
    before: str | None,
    after: str | None,
    source: Source,
    old_path: str | None = None,
) -> FileDiff:
    """The change of ``path`` from blob ``before`` to blob ``after`` (None: absent)."""
    old = None if before is None else await blobs.get(before)
    new = None if after is None else await blobs.get(after)
    return diff_bytes(path, old, new, source, old_path)


def diff_bytes(
    path: str,
    old: bytes | None,
    new: bytes | None,
    source: Source,
    old_path: str | None = None,
) -> FileDiff:
    action: Action = (
        "renamed"
        if old_path is not None
        else "added"
        if old is None
        else "deleted"
        if new is None
        else "modified"
    )
    old_text, new_text = as_text(old), as_text(new)
    binary = (old is not None and old_text is None) or (new is not None and new_text is None)
    diff, added, removed = "", 0, 0
    if not binary:
        diff, added, removed = unified_diff(old_text, new_text, old_path or path, path)
    return FileDiff(
        path=path,
        action=action,
        binary=binary,
        diff=diff,
        added=added,
        removed=removed,
        before=_whole(old_text),
        after=_whole(new_text),
        source=source,
        old_path=old_path,
    )


def unified_diff(
    old: str | None, new: str | None, old_path: str, new_path: str
) -> tuple[str, int, int]:
    """A unified diff as git writes it (``/dev/null`` for an absent side), and its
    added and removed line counts."""
    a = _lines(old)
    b = _lines(new)
    lines = list(
        difflib.unified_diff(
            a,
            b,
            "/dev/null" if old is None else f"a/{old_path}",
            "/dev/null" if new is None else f"b/{new_path}",
            n=CONTEXT_LINES,
        )
    )
    out: list[str] = []
    added = removed = 0
    for i, line in enumerate(lines):
        if i >= 2 and line[:1] == "+":
            added += 1
        elif i >= 2 and line[:1] == "-":
            removed += 1
        if line.endswith("\n"):
            out.append(line)
        else:  # the last line of a text without a final newline
            out += [line + "\n", NO_NEWLINE]
    if out and not out[0].endswith("\n"):
        out[0] += "\n"
    return "".join(out), added, removed


def pair_renames(found: list[FileDiff], moved: dict[str, FileMove]) -> list[FileDiff]:
    """A deleted file whose exact content was added at another path: one rename."""
    added = {
        moved[d.path].after: d
        for d in found
        if d.action == "added" and d.path in moved and moved[d.path].after is not None
    }
    out: list[FileDiff] = []
    gone: set[str] = set()
    for d in found:
        if d.action != "deleted" or d.path not in moved:
            continue
        target = added.pop(moved[d.path].before or "", None)
        if target is not None:
            gone |= {d.path, target.path}
            sources = {d.source, target.source}
            out.append(
                attrs.evolve(
                    target,
                    action="renamed",
                    old_path=d.path,
                    diff="",
                    added=0,
                    removed=0,
                    before=target.after,
                    source=sources.pop() if len(sources) == 1 else "mixed",
                )
            )
    renamed = {d.path: d for d in out}
    return [renamed.get(d.path, d) for d in found if d.path not in gone or d.path in renamed]


def as_text(data: bytes | None) -> str | None:
    """``data`` as text, or None when it is absent or binary."""
    if data is None or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _whole(text: str | None) -> str | None:
    if text is None or len(text) > WHOLE_TEXT_BYTES:
        return None
    if len(text.encode("utf-8")) > WHOLE_TEXT_BYTES:
        return None
    return text


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def messages_in(events: Iterable[ev.Event]) -> int:
    """The messages a person would count among ``events``: prompts and the agent's
    answers."""
    return sum(
        1 for e in events if type(e) is ev.UserPrompt or (type(e) is ev.AssistantMessage and e.text)
    )


async def session_changes(
    events: Sequence[ev.Event],
    blobs: BlobStore,
    session_id: str,
    seq: int | None = None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> list[FileDiff]:
    """One turn's changes (the prompt at ``seq``; neither: the last turn), or the
    net change from the checkpoint ``from_seq`` to ``to_seq`` (None: now)."""
    if seq is not None and (from_seq is not None or to_seq is not None):
        raise InvalidArgument("seq: give a turn's seq, or fromSeq (and toSeq), not both")
    if from_seq is None and to_seq is not None:
        raise InvalidArgument("fromSeq: a range needs its start (toSeq alone is not one)")
    if from_seq is not None:
        return await diffs(blobs, moves(range_events(events, session_id, from_seq, to_seq)))
    if seq is None:
        seq = last_prompt(events)
        if seq is None:
            return []
    return await diffs(blobs, moves(turn_events(events, seq, session_id)))
