"""This process's view of the session index (see file_index): its tail folded, kept
current by reading only the lines appended since the last look, and its sorted
region read from the end, in blocks, only as far as a page needs.

A page of ``list_page`` then costs the lines written since the last page and the
page itself -- in a new process, the tail (bounded by compaction) and the page --
never a fold of every session. A rewrite (a new file) starts the view afresh.
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_left, insort
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import orjson

from .file_index import DELETED, NO_REGION, PENDING, Region, is_loose, parse_lines, region_of
from .info import SessionInfo

BLOCK = 16 * 1024
"""Bytes of the region read at a time: some 100 sessions, two pages of 50."""
CACHED_BLOCKS = 256
"""Parsed blocks kept (the region never changes under an inode): a server's next
pages read none. Past this many the cache starts again."""

Key = tuple[float, str]


class Page(NamedTuple):
    rows: list[SessionInfo]
    pending: frozenset[str]
    """Sessions with a write not recorded: the rows may show them stale."""
    loose: bool
    """The index is worth compacting (see file_index.is_loose)."""


class _Damaged(Exception):
    pass


_DAMAGE = (_Damaged, orjson.JSONDecodeError, TypeError, IndexError, KeyError, ValueError)


class IndexView:
    """Shared by the store's worker threads, hence the lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._forget()

    def _forget(self) -> None:
        self._inode: int | None = None
        self._region = NO_REGION
        self._offset = 0
        """The tail is folded up to here, a line boundary."""
        self.tail: dict[str, SessionInfo | None] = {}
        """Each session the tail names: its latest record, None if deleted."""
        self.pending: set[str] = set()
        self._tail_lines = 0
        self._tail_keys: list[Key] = []
        """(updated_at, id) of the tail's records, ascending."""
        self._blocks: dict[int, tuple[int, list[list]]] = {}
        """Region blocks parsed, by end offset: (start offset, rows)."""

    def page(self, limit: int, after: Key | None) -> Page | None:
        """The sessions of ``list_page``; None when the index is missing or damaged
        (the listing rebuilds it)."""
        with self._lock:
            try:
                with self._opened() as fd:
                    if fd is None:
                        return None
                    key = None if after is None else (after[0], after[1])
                    found = self._page(fd, limit, key)
            except _DAMAGE:
                self._forget()
                return None
            tail_bytes = self._offset - self._region.end
            loose = is_loose(self._region.lines, self._tail_lines, tail_bytes)
            return Page(found, frozenset(self.pending), loose)

    def info(self, session_id: str, updated_at: float) -> SessionInfo | None:
        """The index's record of ``session_id`` if it vouches for one last written
        at ``updated_at`` (found by that key in the region); else None."""
        with self._lock:
            try:
                with self._opened() as fd:
                    if fd is None or session_id in self.pending:
                        return None
                    if session_id in self.tail:
                        found = self.tail[session_id]
                    else:
                        found = self._region_record(fd, (updated_at, session_id))
            except _DAMAGE:
                self._forget()
                return None
            return found if found is not None and found.updated_at == updated_at else None

    # -- reading

    @contextmanager
    def _opened(self) -> Iterator[int | None]:
        """The index open and the view refreshed from it, for one call; None: no index.

        The file is kept open between calls: a rewrite renames a new file over it,
        and while this one is open its inode number cannot be given to a newer file,
        so the same number at the path means the same file.
        """
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            self.close()
            yield None
            return
        if self._fd is None or at_path.st_ino != self._inode:
            self.close()
            try:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                yield None
                return
        try:
            self._refresh(self._fd)
            yield self._fd
        finally:
            if os.name == "nt":  # an open file there could not be renamed over
                os.close(self._fd)
                self._fd = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._forget()

    def __del__(self) -> None:
        # A store dropped without close() must not leak the file it kept open.
        if self._fd is not None:
            os.close(self._fd)

    def _refresh(self, fd: int) -> None:
        """Fold in the tail's lines written since the last look."""
        stat = os.fstat(fd)
        if stat.st_ino != self._inode or stat.st_size < self._offset:
            self._forget()
            self._inode = stat.st_ino
            self._region = self._header(fd, stat.st_size)
            self._offset = self._region.end
        data = os.pread(fd, stat.st_size - self._offset, self._offset)
        end = data.rfind(b"\n") + 1
        if not end:
            return  # nothing new, or a line still being written
        found = parse_lines(data[:end])
        self._fold(found, whole=len(found) > len(self._tail_keys) // 8)
        self._offset += end
        self._tail_lines += len(found)

    def _header(self, fd: int, size: int) -> Region:
        first = b""
        while b"\n" not in first and len(first) < size:
            first = os.pread(fd, max(2 * len(first), 256), 0)
        if b"\n" not in first:
            return NO_REGION  # empty, or one line still being written: all tail
        region = region_of(first[: first.index(b"\n") + 1])
        if region is None or region.end > size:
            raise _Damaged("the index's header")
        return region

    def _fold(self, found: list[list], whole: bool) -> None:
        """Fold tail rows in; ``whole``: many, so sort the keys once after."""
        tail, pending, keys = self.tail, self.pending, self._tail_keys
        for row in found:
            if len(row) == 7:
                info = SessionInfo(*row)
                old = tail.get(info.id)
                if not whole:
                    if old is not None:
                        _drop(keys, (old.updated_at, old.id))
                    insort(keys, (info.updated_at, info.id))
                tail[info.id] = info
                pending.discard(info.id)
            elif row[0] == PENDING:
                pending.add(row[1])
            elif row[0] == DELETED:
                old = tail.get(row[1])
                if old is not None and not whole:
                    _drop(keys, (old.updated_at, old.id))
                tail[row[1]] = None
                pending.discard(row[1])
            else:
                raise _Damaged(f"an index row {row[0]!r}")
        if whole:
            self._tail_keys = sorted((i.updated_at, i.id) for i in tail.values() if i is not None)

    def _page(self, fd: int, limit: int, after: Key | None) -> list[SessionInfo]:
        """The tail's records and the region's, merged, newest first."""
        keys = self._tail_keys
        t = len(keys) if after is None else bisect_left(keys, after)
        region = self._descending(fd, after)
        row = next(region, None)
        found: list[SessionInfo] = []
        while len(found) < limit:
            key = keys[t - 1] if t else None
            if row is None and key is None:
                break
            if key is not None and (row is None or key > (row[2], row[0])):
                info = self.tail[key[1]]
                assert info is not None  # deleted sessions have no key
                found.append(info)
                t -= 1
            else:
                assert row is not None
                found.append(SessionInfo(*row))
                row = next(region, None)
        return found

    def _descending(self, fd: int, after: Key | None) -> Iterator[list]:
        """The region's rows before ``after`` that the tail does not supersede,
        newest first, read a block at a time."""
        pos = self._region.end if after is None else self._seek(fd, after)
        while pos > self._region.start:
            pos, block = self._block(fd, pos)
            for row in reversed(block):
                if len(row) != 7:
                    raise _Damaged("a region row")
                if row[0] not in self.tail:
                    yield row

    def _block(self, fd: int, end: int) -> tuple[int, list[list]]:
        """The whole lines of the region that end by ``end`` (a line boundary), up
        to a block of them: (where they start, their rows)."""
        cached = self._blocks.get(end)
        if cached is not None:
            return cached
        size = BLOCK
        while True:
            start = max(self._region.start, end - size)
            # From the byte before: is ``start`` a line's start?
            data = os.pread(fd, end - start + 1, start - 1)
            if len(data) != end - start + 1 or not data.endswith(b"\n"):
                raise _Damaged("the region is shorter than its header says")
            cut = data.find(b"\n") + 1  # at the region's start: the header's newline
            if cut < len(data):
                break
            size *= 2  # a line longer than the block
        found = (start - 1 + cut, parse_lines(data[cut:]))
        if len(self._blocks) >= CACHED_BLOCKS:
            self._blocks.clear()
        self._blocks[end] = found
        return found

    def _seek(self, fd: int, after: Key) -> int:
        """Where in the region the rows before ``after`` end: the region is sorted,
        so a bisection by byte offset, a line read at each step."""
        lo, hi = self._region.start, self._region.end  # line boundaries
        while hi - lo > BLOCK:
            line = self._line_from(fd, (lo + hi) // 2, hi)
            if line is None:
                break  # no line starts in the upper half: scan what is left
            at, text = line
            row = orjson.loads(text)
            if (row[2], row[0]) < after:
                lo = at + len(text)
            else:
                hi = at
        data = os.pread(fd, hi - lo, lo)
        pos = lo
        for text in data.splitlines(keepends=True):
            row = orjson.loads(text)
            if (row[2], row[0]) >= after:
                break
            pos += len(text)
        return pos

    def _line_from(self, fd: int, at: int, end: int) -> tuple[int, bytes] | None:
        """The first whole line of the region starting at or after ``at`` and
        before ``end`` (a line boundary): (its offset, its bytes with the newline)."""
        size = 1024
        while True:
            data = os.pread(fd, min(size, end - at + 1), at - 1)  # from the byte before
            first = data.find(b"\n")
            if at + first >= end:
                return None
            stop = data.find(b"\n", first + 1) if first >= 0 else -1
            if stop >= 0:
                return at + first, data[first + 1 : stop + 1]
            if at - 1 + len(data) >= end:
                raise _Damaged("a region line without its end")
            size *= 2

    def _region_record(self, fd: int, key: Key) -> SessionInfo | None:
        pos = self._seek(fd, key)
        line = self._line_from(fd, pos, self._region.end) if pos < self._region.end else None
        if line is None:
            return None
        row = orjson.loads(line[1])
        return SessionInfo(*row) if (row[2], row[0]) == key else None


def _drop(keys: list[Key], key: Key) -> None:
    at = bisect_left(keys, key)
    if at < len(keys) and keys[at] == key:
        del keys[at]
