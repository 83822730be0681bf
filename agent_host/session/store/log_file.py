"""One session's log file: framed lines, then zeros that later appends write over.

Why the zeros: an append that grows a file makes fdatasync commit the file's new
size to the filesystem's journal as well as the data, and on ext4 here that is a
third of the sync (150 µs against 100 µs for the same bytes written over zeros
already on disk; docs/performance.md, P1). So a log grows a stretch at a time,
ahead of what it holds, with zeros really written (a hole would need its blocks
allocated by the later write, which is metadata again), and most appends then
change no metadata at all. The stretch is an eighth of the log (at most 1 MiB),
rounded up to whole 4 KiB pages with at least 1 KiB of room: a small log still fits
its one page, which the filesystem allocates anyway.

Reading: no line holds a NUL byte (JSON escapes it), so the content ends where the
zeros begin. A process that knows the log reads on from where it stopped up to the
first NUL; one that does not looks for the last non-zero byte from the end. Either
way, bytes a crash left -- a line cut short, or after a power cut a run of zeros
with stray bytes after it -- end the content without a newline or in a damaged
line, which :mod:`framing` reports as a torn tail.
"""

from __future__ import annotations

import logging
import os
from array import array
from typing import Any

import attrs

from .. import events as ev
from ..errors import CorruptLogError
from .pacing import WouldBlock
from .summary import Summary

PAGE = 4096
MAX_SPARE = 1 << 20
MIN_ROOM = 1024
MARK = len(b'{"batch":"1","crc":"01234567')
_FIRST_READ = 4096

log = logging.getLogger(__name__)


@attrs.define
class LogState:
    """What this process last saw of one session's log."""

    size: int
    """Where the content ends: the next append is written here."""
    allocated: int
    """The file's size as last seen: content, then zeros. Another process may have
    grown it since; believing it smaller only costs zeros written over zeros."""
    offsets: array[int]
    """Where each event's line starts: machine ints, 8 bytes each, not 36 as a list's."""
    summary: Summary
    mark: bytes = b""
    """The start of the last event's line, up to and with its checksum."""
    first: int = 0
    """Events up to this seq were never read here: ``offsets[i]`` is where event
    ``first + i + 1`` starts. Nonzero for a long log first seen from its end (the
    file store's cold start); what needs an earlier event reads the whole log."""

    def still_matches(self, fd: int) -> bool:
        """Whether the log still holds what this process saw, checked by content.

        Not by ``fstat``: on Linux 6.13+ a stat makes the file's next write take a
        fine-grained timestamp, which dirties the inode and costs that write's
        fdatasync a journal commit (+45 µs here, docs/performance.md). Another
        process can only replace or truncate the log by lines, so if the line this
        process saw last is still where it was, crc and all, so is all before it.
        """
        return not self.offsets or os.pread(fd, MARK, self.offsets[-1]) == self.mark

    def remember_last_line(self, fd: int) -> None:
        self.mark = os.pread(fd, MARK, self.offsets[-1]) if self.offsets else b""


def content_end(fd: int, size: int) -> int:
    """Where the content of a log of ``size`` bytes ends: after its last non-zero byte."""
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        kept = len(chunk.rstrip(b"\0"))
        if kept:
            return start + kept
        pos = start
    return 0


def read_on(fd: int, start: int, limit: int | None = None) -> tuple[bytes, int | None]:
    """The content from ``start`` up to the first NUL, and the file's size if it
    ended first (else None).

    More than ``limit`` bytes of it raises :class:`WouldBlock`.
    """
    chunks: list[bytes] = []
    pos, step = start, _FIRST_READ
    while True:
        chunk = os.pread(fd, step, pos)
        nul = chunk.find(b"\0")
        if nul >= 0:
            chunks.append(chunk[:nul])
            file_end = None
            break
        chunks.append(chunk)
        pos += len(chunk)
        if len(chunk) < step:
            file_end = pos
            break
        if limit is not None and pos - start > limit:
            raise WouldBlock(f"more than {limit} new bytes")
        step = min(step * 4, 8 << 20)
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), file_end


def write_at(fd: int, data: bytes, at: int, allocated: int) -> int:
    """Write ``data`` at ``at`` and fdatasync; return the file's size after.

    Data that does not fit in the zeros already there is written with a new
    stretch of zeros after it. On failure (disk full, I/O error) the file is cut
    back to ``at`` before the error is raised: a write whose sync failed is still
    readable from the page cache, and no part of an append that raised may be.
    """
    end = at + len(data)
    if end > allocated:
        grown = -(-(end + min(end // 8, MAX_SPARE)) // PAGE) * PAGE
        if grown - end < MIN_ROOM:
            grown += PAGE
        data += bytes(grown - end)
        allocated = grown
    try:
        view = memoryview(data)
        pos = at
        while view:
            written = os.pwrite(fd, view, pos)
            view, pos = view[written:], pos + written
        os.fdatasync(fd)
    except BaseException:
        unwrite(fd, at, len(data))
        raise
    return allocated


def unwrite(fd: int, at: int, length: int) -> None:
    """Take back ``length`` bytes written at ``at``: cut the file there, or failing
    that write zeros over them (blocks already allocated need no free space)."""
    try:
        os.ftruncate(fd, at)
    except OSError as exc:
        try:
            os.pwrite(fd, bytes(length), at)
        except OSError:
            log.error("could not take back a failed write to a session log: %s", exc)
            return
    try:
        os.fdatasync(fd)  # so a power cut does not bring back bytes already on disk
    except OSError as exc:
        log.warning("could not sync a session log after taking back a write: %s", exc)


def cut_to(fd: int, content: bytes, cut: int) -> None:
    """Cut the log (whose bytes are ``content``) to ``cut`` and sync it; raise only
    with the log as it was."""
    os.ftruncate(fd, cut)
    try:
        os.fsync(fd)
    except OSError as exc:
        # Seen by every reader yet perhaps not on disk: put back what was cut.
        try:
            write_at(fd, content[cut:], cut, len(content))
        except OSError:
            log.error("a truncated log could not be synced or put back (%s); the cut stays", exc)
            return  # the truncation has happened, and its stash record stays
        raise


def decode_event(where: str, objects: list[dict[str, Any]]) -> list[ev.Event]:
    """The events of one framed record of the log at ``where``."""
    try:
        return ev.from_dicts(objects)
    except Exception as exc:  # a checksummed record that still fails to decode
        raise CorruptLogError(f"{where}: an event could not be read: {exc}") from exc
