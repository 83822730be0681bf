"""The file store's resume snapshots (see session.resume_snapshot), and a long
log's last events read from its end, for a process that has not read the log.

``snapshots/<id>.snap`` holds the seq it was taken at and the snapshot's length
on its first line (only the seq: written before segments were), then the
snapshot, then its segments, appended to the file in order, each after a line of
its length. It is written whole
to a temporary file and renamed over the last one (which drops the segments in
the same step), not synced: it is a cache of a fold of the log, and the reader
checks it (its own checksums, and the log's event at that seq), so a crash that
leaves the old one, none, or a damaged one costs a fold of the log, never a wrong
resume; a torn last segment is left out (the log after the one before it is
folded on top), and the next segment appended writes the snapshot whole instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ..errors import CorruptLogError
from ..events import Event
from . import framing, log_file

_FIRST_READ = 1 << 16
_FIRST_LINE = 48


def write(path: str, head: int, data: bytes) -> None:
    # One temporary name per thread: two writers never share one half-written file.
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(b"%d %d\n" % (head, len(data)))
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _first_line(data: bytes) -> tuple[int, int | None, int] | None:
    """The seq, the snapshot's length (None: a file of before segments) and where
    the snapshot starts; None if the line is damaged."""
    newline = data.find(b"\n", 0, _FIRST_LINE)
    fields = data[: max(newline, 0)].split(b" ")
    try:
        head = int(fields[0])
        size = int(fields[1]) if len(fields) == 2 else None
    except ValueError:
        return None
    return (head, size, newline + 1) if newline > 0 and len(fields) <= 2 else None


def read(path: str, limit: int | None = None) -> tuple[int, bytes] | None:
    """The seq a snapshot was taken at and the snapshot followed by its whole
    segments (only its first ``limit`` bytes, if given); None if there is none or
    its first line is damaged (the snapshot's own checks catch the rest)."""
    try:
        with open(path, "rb") as f:
            data = f.read(-1 if limit is None else limit + _FIRST_LINE)
    except FileNotFoundError:
        return None
    first = _first_line(data)
    if first is None:
        return None
    head, size, start = first
    if limit is not None:
        return head, data[start : start + limit]
    if size is None:
        return head, data[start:]
    parts, at = [data[start : start + size]], start + size
    while (found := _segment_at(data, at)) is not None:
        parts.append(data[found[0] : found[1]])
        at = found[1]
    return head, b"".join(parts)


def _segment_at(data: bytes, at: int) -> tuple[int, int] | None:
    """Where the segment framed at ``at`` starts and ends; None if none is whole there."""
    newline = data.find(b"\n", at, at + 24)
    if newline < 0 or not data[at:newline].isdigit():
        return None
    end = newline + 1 + int(data[at:newline])
    return (newline + 1, end) if end <= len(data) else None


def append(path: str, data: bytes) -> tuple[int, int, int] | None:
    """Append a segment after the snapshot and its segments: how many segments
    there are then, their bytes and the snapshot's; None (nothing appended) when
    there is no snapshot, one written before segments were, or a torn segment
    last (one after it would never be read)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        first = _first_line(os.pread(fd, _FIRST_LINE, 0))
        if first is None:
            return None
        _, size, start = first
        if size is None:
            return None
        at, end, count, total = start + size, os.fstat(fd).st_size, 0, 0
        # Hop from segment to segment by their length lines: a few small reads.
        while at < end:
            line = os.pread(fd, 24, at)
            newline = line.find(b"\n")
            if newline <= 0 or not line[:newline].isdigit():
                return None
            length = int(line[:newline])
            at, count, total = at + newline + 1 + length, count + 1, total + length
        if at != end:
            return None
        os.pwrite(fd, b"%d\n%s" % (len(data), data), end)  # O_APPEND: at the end
        return count + 1, total + len(data), size
    finally:
        os.close(fd)


def tail_records(
    fd: int, where: str, decode: Callable[[list[Any]], list[Event]], first_seq: int = 0
) -> tuple[list[Event], list[int], int] | None:
    """The log's last events -- back to ``first_seq`` at least, if it has it --
    where their lines start, and where its content ends; read from its end. None
    when that cannot be settled here (a torn or damaged tail, seqs out of order):
    a full read settles it, repairing or raising as it does for any read."""
    end = log_file.content_end(fd, os.lseek(fd, 0, os.SEEK_END))
    want = _FIRST_READ
    while end:
        start = max(0, end - want)
        data = os.pread(fd, end - start, start)
        if not data.endswith(b"\n"):
            return None
        if start:
            cut = data.find(b"\n") + 1  # the first line may start before the read
            if cut == len(data):
                want *= 4
                continue
            data, start = data[cut:], start + cut
        try:
            found = framing.scan(data, decode, where)
        except CorruptLogError:
            return None
        events = found.records
        if found.torn or not events:
            return None
        seqs = [e.seq for e in events]
        if seqs != list(range(seqs[0], seqs[0] + len(seqs))) or (start == 0 and seqs[0] != 1):
            return None
        if seqs[0] <= max(first_seq, 1) or not start:
            return events, [start + offset for offset in found.offsets], end
        want *= 4
    return [], [], 0
