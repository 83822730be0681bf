"""A session's resume snapshot: what a resume needs, folded up to a turn end, so a
resume reads one blob instead of folding the whole log.

The log stays the source of truth; the snapshot is a cache of a fold of it. It
names the event it was folded up to -- its seq, timestamp and a checksum of its
JSON -- and is used only while the log still holds that very event at that seq:
a log cut back and grown again to the same seq has another event there (another
timestamp). Events after it are folded on top, unless one of them can change
what came before (a restore, its undo, a finished restore's record): then the
whole log is folded instead. A snapshot that is missing, of another version, or
damaged (its checksums) is rebuilt from the log, with a warning, never an error.

Format, version 1 (bytes)::

    AHS1 <crc32 of header, 8 hex> <header length>\\n<header JSON><body JSON>

The header (small, read on every resume) holds the head, the counts, cost and
model, and the body's length and crc32; the body (read when the conversation is
needed: a turn, the history) holds the model messages, the seq that opened each
and the tool calls still unanswered, the state :class:`MessageFold` resumes from.

Segments. A turn end does not rewrite the whole snapshot: it appends a segment
holding what its conversation changed since the last one (the store keeps them
after the snapshot, in order, and gives them back after its body)::

    AHG1 <crc32 of JSON, 8 hex> <JSON length>\n<JSON>

The JSON names the event the previous segment (or the snapshot) was folded up to
(``prev``) and its own (``head``), how many messages of the conversation before it
stay (``keep``: the last one may have grown a tool call) and the messages, seqs and
open calls after those. A reader applies segments while each follows the last
and its head is still the log's event at that seq; the first that does not (torn
by the log cut back, another writer's) ends them, and the log's events after the
last one applied are folded on top, as after a snapshot; one torn by a crash is
damage (the log is folded and the snapshot written whole). The header
stays the snapshot's: a resume reads it and the events after its head. Writing the
whole snapshot again ("folding") drops the segments: at a compaction, and when
they pile up (see :func:`save_segment`).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from typing import Any

import attrs
import orjson

from . import events as ev
from .checkpoints import pending_intent
from .conversation import MessageFold
from .errors import StoreUnavailable
from .pricing import total_cost
from .session_folder import folder_of

VERSION = 1
HEADER_READ = 4096
"""Bytes of a snapshot a resume reads: its header, not its conversation."""
_MAGIC = b"AHS1 "
_SEGMENT = b"AHG1 "
MAX_SEGMENTS = 64
"""Segments kept before the snapshot is written whole again."""
SEGMENTS_SHARE = 4
"""Folded once the segments together exceed 1/SEGMENTS_SHARE of the snapshot..."""
SEGMENTS_FLOOR = 256 << 10
"""... and this many bytes (a small snapshot costs little to write whole, but a
turn's segment is often larger than it: it would be folded at every turn end)."""
log = logging.getLogger(__name__)


class SnapshotDamaged(Exception):
    """A snapshot that cannot be used as it is; the log is folded instead."""


@attrs.frozen
class HeadMark:
    """The event a snapshot was folded up to, as the log stores it."""

    seq: int
    ts: float
    digest: str

    @classmethod
    def of(cls, event: ev.Event) -> HeadMark:
        return cls(event.seq, event.ts, f"{zlib.crc32(ev.encode(event)):08x}")

    def matches(self, event: ev.Event) -> bool:
        return event.seq == self.seq and event.ts == self.ts and HeadMark.of(event) == self


@attrs.define
class Header:
    """What a resume learns from a snapshot without reading its conversation."""

    head: HeadMark
    turns: int
    """Prompts in the timeline (what session/resume reports)."""
    assistant_messages: int
    cost: float | None
    """USD of every Usage in the log (None: a model's price was unknown)."""
    model: str | None
    """The model the next turn uses unless another is named (None: the host's)."""
    body_len: int = 0
    body_crc: str = ""
    workspace: str | None = None
    """The folder the session was started in, where its files belong ("": its log
    does not say; None: a snapshot written before this was recorded)."""


def changes_the_past(event: ev.Event) -> bool:
    """Whether ``event``, folded after a snapshot, could change what the snapshot
    already folded (so the whole log has to be folded instead)."""
    match event:
        case ev.Restore() | ev.RestoreUndone() | ev.RestoreApplied():
            return True
        case ev.FileSnapshot():
            return event.jump
    return False


def session_model(timeline: Sequence[ev.Event]) -> str | None:
    """The model the session's turns use: the last one a prompt chose, else the one
    it was started with (None: the host's)."""
    for event in reversed(timeline):
        if type(event) is ev.UserPrompt and event.model:
            return event.model
    for event in timeline[:2]:
        if type(event) is ev.SessionStarted:
            return event.model
    return None


def snapshot_of(
    events: Sequence[ev.Event], timeline: Sequence[ev.Event], fold: MessageFold
) -> bytes | None:
    """The snapshot of a whole log (``fold`` folded from its ``timeline``); None
    when there is none to take: an empty log, or a restore still to finish."""
    if not events or pending_intent(events) is not None:
        return None
    header = Header(
        head=HeadMark.of(events[-1]),
        turns=sum(1 for e in timeline if type(e) is ev.UserPrompt),
        assistant_messages=sum(1 for e in timeline if type(e) is ev.AssistantMessage),
        cost=total_cost(events),
        model=session_model(timeline),
        workspace=folder_of(events),
    )
    return encode(header, fold)


def encode(header: Header, fold: MessageFold) -> bytes:
    # One message per line, so that a history page parses only its own messages.
    messages = b",\n".join(map(orjson.dumps, fold.messages))
    index = orjson.dumps({"seqs": fold.seqs, "open_calls": fold.open_calls})
    body = b"%s\n[%s]" % (index, messages)
    header = attrs.evolve(header, body_len=len(body), body_crc=f"{zlib.crc32(body):08x}")
    head = orjson.dumps({"v": VERSION, **attrs.asdict(header)})
    return b"%s%08x %d\n%s%s" % (_MAGIC, zlib.crc32(head), len(head), head, body)


def parse_header(data: bytes) -> tuple[Header, int]:
    """The header, and where the body starts; SnapshotDamaged if it is not whole."""
    newline = data.find(b"\n", 0, 64)
    first = data[:newline].split(b" ")
    if newline < 0 or len(first) != 3 or first[0] + b" " != _MAGIC:
        raise SnapshotDamaged("not a version 1 snapshot")
    try:
        crc, size = int(first[1], 16), int(first[2])
    except ValueError as exc:
        raise SnapshotDamaged("its first line is damaged") from exc
    head = data[newline + 1 : newline + 1 + size]
    if len(head) != size or zlib.crc32(head) != crc:
        raise SnapshotDamaged("its header fails its checksum")
    try:
        fields: dict[str, Any] = orjson.loads(head)
        if fields.pop("v") != VERSION:
            raise SnapshotDamaged(f"version {fields.get('v')!r}, not {VERSION}")
        fields["head"] = HeadMark(**fields["head"])
        header = Header(**fields)
    except (KeyError, TypeError, orjson.JSONDecodeError) as exc:
        raise SnapshotDamaged(f"its header does not read: {exc}") from exc
    return header, newline + 1 + size


def _header_end(data: bytes) -> int:
    try:
        newline = data.index(b"\n", 0, 64)
        return newline + 1 + int(data[:newline].split(b" ")[2])
    except (ValueError, IndexError):
        return 0  # not a header: parse_header says why


def parse_body(
    data: bytes, header: Header, at: int, last: int | None = None
) -> tuple[MessageFold, int]:
    """The conversation -- only its ``last`` messages, if given -- and how many
    messages before those were left out."""
    body = memoryview(data)[at:]
    if len(body) != header.body_len or f"{zlib.crc32(body):08x}" != header.body_crc:
        raise SnapshotDamaged("its conversation fails its checksum")
    try:
        newline = data.index(b"\n", at)
        index = orjson.loads(body[: newline - at])
        seqs, open_calls = index["seqs"], index["open_calls"]
        start, cut = newline + 1, 0
        if last is not None and last < len(seqs):
            cut = len(seqs) - last
            earliest = min(open_calls.values(), default=cut)
            pos = len(data) - 1
            for _ in range(last):
                pos = data.rfind(b",\n", start, pos)
                if pos < start:
                    break
            if earliest < cut or pos < start:
                cut = 0  # a call still open before the page: it is read whole
            else:
                messages = orjson.loads(b"[" + data[pos + 2 :])
        if not cut:
            messages = orjson.loads(body[start - at :])
        fold = MessageFold(messages, seqs[cut:])
        fold.open_calls.update({c: i - cut for c, i in open_calls.items()})
    except (KeyError, TypeError, ValueError) as exc:  # orjson's errors are ValueErrors
        raise SnapshotDamaged(f"its conversation does not read: {exc}") from exc
    if len(fold.messages) != len(fold.seqs):
        raise SnapshotDamaged("its messages and seqs differ in number")
    return fold, cut


@attrs.frozen
class Segment:
    """What a turn changed in the conversation since the last segment."""

    prev: HeadMark
    head: HeadMark
    keep: int
    messages: list[dict[str, Any]]
    seqs: list[int]
    open_calls: dict[str, int]

    def encode(self) -> bytes:
        body = orjson.dumps(
            {
                "prev": attrs.asdict(self.prev),
                "head": attrs.asdict(self.head),
                "keep": self.keep,
                "messages": self.messages,
                "seqs": self.seqs,
                "open_calls": self.open_calls,
            }
        )
        return b"%s%08x %d\n%s" % (_SEGMENT, zlib.crc32(body), len(body), body)


def segment_of(prev: HeadMark, head: HeadMark, fold: MessageFold, kept: int) -> Segment:
    """The segment taking a conversation of ``kept`` messages folded up to ``prev``
    to ``fold``, folded up to ``head``: messages are only appended after ``kept``,
    but the last one kept may have been replaced (a tool call joined it)."""
    keep = max(kept - 1, 0)
    return Segment(prev, head, keep, fold.messages[keep:], fold.seqs[keep:], dict(fold.open_calls))


def parse_segments(data: bytes | memoryview, at: int) -> list[Segment]:
    """The segments from ``at`` on; SnapshotDamaged if one is torn or damaged (a
    crash while it was appended: the log is folded, and the snapshot written whole)."""
    view = memoryview(data)
    found: list[Segment] = []
    while at < len(view):
        line = bytes(view[at : at + 64])
        newline = line.find(b"\n")
        first = line[: max(newline, 0)].split(b" ")
        if newline < 0 or len(first) != 3 or first[0] + b" " != _SEGMENT:
            raise SnapshotDamaged(f"segment {len(found) + 1} is not one")
        try:
            crc, size = int(first[1], 16), int(first[2])
            body = view[at + newline + 1 : at + newline + 1 + size]
            if len(body) != size or zlib.crc32(body) != crc:
                raise SnapshotDamaged(f"segment {len(found) + 1} fails its checksum")
            fields = orjson.loads(body)
            found.append(
                Segment(
                    HeadMark(**fields["prev"]),
                    HeadMark(**fields["head"]),
                    int(fields["keep"]),
                    fields["messages"],
                    fields["seqs"],
                    fields["open_calls"],
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotDamaged(f"segment {len(found) + 1} does not read: {exc}") from exc
        at += newline + 1 + size
    return found


def _apply(
    fold: MessageFold, cut: int, segments: list[Segment], head: HeadMark, events: list[ev.Event]
) -> tuple[int, bool]:
    """Apply to ``fold`` (its first ``cut`` messages left out) the segments that
    follow on from ``head`` and still match ``events`` (the log from ``head`` on):
    how many of the events after ``head`` they folded, and False when the page
    read is too short for them (the conversation must be read whole)."""
    covered = 0
    for segment in segments:
        at = segment.head.seq - head.seq
        if segment.prev != head or at <= 0 or at >= len(events):
            break
        if not segment.head.matches(events[at]):
            break
        if segment.keep - cut > len(fold.messages) or len(segment.messages) != len(segment.seqs):
            break  # not a segment of this conversation
        if segment.keep < cut:
            return covered, False
        del fold.messages[segment.keep - cut :], fold.seqs[segment.keep - cut :]
        fold.messages.extend(segment.messages)
        fold.seqs.extend(segment.seqs)
        fold.open_calls.clear()
        fold.open_calls.update({c: i - cut for c, i in segment.open_calls.items()})
        if any(i < 0 for i in fold.open_calls.values()):
            return covered, False
        head, events, covered = segment.head, events[at:], covered + at
    return covered, True


@attrs.define
class Loaded:
    """A snapshot that still matches its log, and the log's events after it."""

    header: Header
    tail: list[ev.Event]
    fold: MessageFold | None = None
    """The conversation as of the last segment applied (read only when asked for)."""
    cut: int = 0
    """Messages before ``fold``'s first left out (a page was asked for)."""
    covered: int = 0
    """Events of ``tail`` already folded into ``fold`` (by its segments)."""
    mark: HeadMark | None = None
    """The event ``fold`` was folded up to (the header's head, or the last
    segment's)."""


async def load(
    store: Any, session_id: str, *, body: bool = False, last: int | None = None
) -> Loaded | None:
    """The session's snapshot if it still matches the log (with the conversation,
    when ``body``, only its ``last`` messages if given, its segments applied); None
    when there is none, it is stale, or it is damaged (then a warning says why), or
    a newer event changes what it folded."""
    read = getattr(store, "read_snapshot", None)
    if read is None:
        return None  # a store of another make, without snapshots: fold the log
    found = await read(session_id, None if body else HEADER_READ)
    if found is None:
        return None
    data, events = found
    segments: list[Segment] = []
    try:
        if not body and len(data) == HEADER_READ and len(data) < _header_end(data):
            return await load(store, session_id, body=True)  # a header longer than read
        header, at = parse_header(data)
        fold, cut = None, 0
        if body:
            end = at + header.body_len
            if len(data) > end:
                segments = parse_segments(data, end)
                data = data[:end]
            fold, cut = parse_body(data, header, at, last)
    except SnapshotDamaged as exc:
        log.warning(
            "session %s: its resume snapshot is not used (%s); folding the log", session_id, exc
        )
        return None
    if not events or not header.head.matches(events[0]):
        return None  # stale: the log was cut (and maybe grown again) since
    tail = events[1:]
    if any(changes_the_past(e) for e in tail):
        return None
    covered, mark = 0, header.head
    if fold is not None and segments:
        covered, whole = _apply(fold, cut, segments, header.head, events)
        if not whole:
            return await load(store, session_id, body=True)  # the page was too short
        if covered:
            mark = HeadMark.of(tail[covered - 1])
    return Loaded(header, tail, fold, cut, covered, mark)


async def save(store: Any, session_id: str, data: bytes | None, head: int) -> bool:
    """Write a snapshot (whole, dropping its segments): whether it was handed to
    the store. A store that cannot is told nothing, and a failure is only logged:
    the snapshot is a cache, the log is already durable."""
    write = getattr(store, "write_snapshot", None)
    if write is None or data is None:
        return False
    try:
        await write(session_id, head, data)
    except (OSError, StoreUnavailable) as exc:
        log.warning("session %s: the resume snapshot was not written: %s", session_id, exc)
        return False
    return True


async def save_segment(store: Any, session_id: str, segment: Segment) -> bool | None:
    """Append a segment after the session's snapshot: True; False when the
    snapshot is to be written whole instead: the store keeps none to append to (or
    cannot append), or the segments have piled up (too many, or together more than
    a share of the snapshot); None when it failed (only logged: a cache)."""
    append = getattr(store, "append_snapshot", None)
    if append is None:
        return False
    try:
        piled = await append(session_id, segment.encode())
    except (OSError, StoreUnavailable) as exc:
        log.warning("session %s: the resume snapshot was not written: %s", session_id, exc)
        return None
    if piled is None:
        return False
    count, size, base = piled
    return count <= MAX_SEGMENTS and size <= max(base // SEGMENTS_SHARE, SEGMENTS_FLOOR)
