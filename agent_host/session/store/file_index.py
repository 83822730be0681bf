"""The file store's session index: what ``list()`` and ``list_page`` read instead of
every log.

``index.jsonl`` holds small JSON arrays, one a line:

* ``["#", 2, region_bytes, region_count]`` -- first, in an index written by a
  compaction (format 2): the next ``region_bytes`` bytes are ``region_count``
  records, one per session, sorted by ``(updated_at, id)`` -- the sorted region;
* ``[id, created_at, updated_at, head, turns, title, workspace]`` -- the session as
  of a write (an index of 6-field rows, from before the workspace, is rebuilt);
* ``["?", id]`` -- a write to the session is about to happen;
* ``["!", id]`` -- the session was deleted.

Writes append after the region, newest last: the tail, where a line supersedes
what the region or an earlier line said of its session. An index without the
header (format 1, and a new store's before its first compaction) is all tail.
A page of ``list_page`` then costs the tail and the page (file_index_view reads
the region from its end), so the tail is kept short: once it passes
:data:`TAIL_LIMIT` bytes, or a quarter of the region's lines, the index is
*loose* and the next page or ``list()`` compacts it.

A write announces itself before touching the log and records the result after,
so a writer that dies in between leaves a ``?`` with no record after it; the
listing then reads that one log and writes the record the writer could not. The
index is a cache of the logs: lost or damaged, it is rebuilt from them. Index
lines are not fsynced: the logs are the truth, and a lost line is repaired like
a dead writer's. A rewrite (compaction, rebuild) is: a temp file, fsynced, renamed
over the index, so a crash leaves the old index or the new one, whole.

Writers hold ``index.lock`` shared while they write their lines; a rewrite holds
it exclusive while it replaces the file, so no line can go to a file that is being
replaced. A compaction builds the new file before it takes the lock, then, under
it, copies the lines appended meanwhile (whole lines: no writer is mid-line while
the lock is held) and renames: writers wait for a copy of a few lines, not for a
fold of every session. (Writers once checked, after writing, whether the path had
been renamed under them; the stat that took cost each append's fdatasync a journal
commit, see log_file. A rewrite still marks ``?`` every session such an older
writer wrote to the old file meanwhile.)

A record that cannot be written (a full disk) after its log was changed leaves the
``?`` as the last word on that session, which the listing repairs like a dead
writer's; a line cut short by the disk damages the index, which is rebuilt.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import NamedTuple

import orjson

from . import locking
from .info import SessionInfo
from .summary import Summary

PENDING = "?"
DELETED = "!"
HEADER = "#"
FORMAT = 2
TAIL_LIMIT = 128 * 1024
"""Tail bytes past which the index is compacted. A new process's first page parses
the whole tail: 128 KiB is a millisecond or two; at 100,000 sessions a compaction
(about a second) then comes every ~800 writes."""
STRAY_AGE = 3600.0
"""A rewrite's temp file older than this was left by a crash, and is removed."""


class Loaded(NamedTuple):
    sessions: dict[str, SessionInfo]
    pending: set[str]
    """Ids with a write that never finished (see the module's doc)."""
    loose: bool
    """Worth compacting (see :func:`is_loose`)."""


class Region(NamedTuple):
    """Where the sorted region lies: bytes ``start`` to ``end``, ``lines`` lines."""

    start: int
    end: int
    lines: int


NO_REGION = Region(0, 0, 0)


def is_loose(region_count: int, tail_lines: int, tail_bytes: int) -> bool:
    # Every write adds two lines; past a quarter of the region, the whole fold
    # pays more than a compaction costs once. (Both the whole fold and a new
    # process's view decide by this, from the same file, so they agree.)
    return tail_bytes > TAIL_LIMIT or tail_lines > region_count // 4 + 100


def region_of(first_line: bytes) -> Region | None:
    """The region an index whose first line is ``first_line`` (with its newline)
    declares: :data:`NO_REGION` without a header, None if the header is damaged."""
    try:
        row = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return None
    if not (isinstance(row, list) and len(row) == 4 and row[0] == HEADER):
        return NO_REGION
    _, version, size, count = row
    if version != FORMAT or not (isinstance(size, int) and isinstance(count, int)):
        return None  # a format this version cannot read: rebuilt from the logs
    if size < 0 or count < 0 or (size == 0) != (count == 0):
        return None
    return Region(len(first_line), len(first_line) + size, count)


class SessionIndex:
    def __init__(self, root: Path) -> None:
        self.path = root / "index.jsonl"
        self._lock_path = str(root / "index.lock")
        self._shared = locking.SharedHold(self._lock_path)

    def writing(self, wait: bool = True) -> AbstractContextManager[None]:
        """Hold the index shared while writing lines to it (see the module's doc)."""
        return self._shared.held(wait)

    def close(self) -> None:
        self._shared.close()

    def pending(self, session_id: str) -> None:
        self._append(orjson.dumps([PENDING, session_id]) + b"\n")

    def record(self, session_id: str, summary: Summary) -> None:
        self._append(_record(session_id, summary))

    def deleted(self, session_id: str) -> None:
        self._append(orjson.dumps([DELETED, session_id]) + b"\n")

    def _append(self, line: bytes) -> None:
        while True:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                # A short write (a full disk) would leave half a line for the next
                # one to run into: the rest is written, or the error raised.
                _write_all(fd, line)
                if locking.fcntl is not None:
                    return  # the caller holds the index shared: no rewrite is under way
                written_to = os.fstat(fd).st_ino
            finally:
                os.close(fd)
            try:
                if os.stat(self.path).st_ino == written_to:
                    return
            except FileNotFoundError:
                pass
            # A rewrite renamed a new index into place: make sure it has our line.

    def load(self) -> Loaded | None:
        """The index folded whole; None when it is missing or damaged and must be
        rebuilt."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return parse(data)

    def compact(self) -> None:
        """Rewrite the index sorted, its tail empty, if it is still loose."""

        def compacted(data: bytes) -> bytes | None:
            loaded = parse(data)
            if loaded is None or not loaded.loose:
                return None
            return sorted_form(loaded.sessions, loaded.pending)

        with _opened(self.path) as old:
            if old is None:
                return
            seen = _read_from(old, 0)
            inode = os.fstat(old).st_ino
        upto = seen.rfind(b"\n") + 1
        data = compacted(seen[:upto])
        if data is None:
            return
        # Built and made durable before the lock: writers wait only for the rest.
        tmp = self._temp()
        renamed = False
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                _write_all(fd, data)
                os.fsync(fd)
                renamed = self._replace(tmp, fd, compacted, inode, upto)
            finally:
                os.close(fd)
        finally:
            if not renamed:  # a full disk, or another rewrite came first
                tmp.unlink(missing_ok=True)

    def rebuild(self, records: Callable[[], bytes]) -> None:
        """Replace the index with ``records()`` (lines folded from the logs), sorted.

        The logs are read under the lock: a write that raced the read could
        otherwise leave a record older than its log with no ``?`` after it."""
        with locking.hold(self._lock_path), _opened(self.path) as old:
            seen = 0 if old is None else os.fstat(old).st_size
            loaded = parse(records()) or Loaded({}, set(), False)
            tmp = self._temp()
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                try:
                    _write_all(fd, sorted_form(loaded.sessions, set()))
                    os.fsync(fd)
                finally:
                    os.close(fd)
                self._rename(tmp, old, seen)
            finally:
                tmp.unlink(missing_ok=True)

    def _replace(
        self,
        tmp: Path,
        fd: int,
        build: Callable[[bytes], bytes | None],
        inode: int,
        upto: int,
    ) -> bool:
        """Under the lock: add to ``tmp`` (open as ``fd``, holding ``build`` of the
        index's first ``upto`` bytes, inode ``inode``) the lines written since, and
        rename it over the index; whether it was."""
        with locking.hold(self._lock_path), _opened(self.path) as current:
            if current is None or os.fstat(current).st_ino != inode:
                return False  # deleted or rewritten meanwhile: that rewrite stands
            late = _read_from(current, upto)
            seen = upto + len(late)
            if late:
                if late.endswith(b"\n") and _rows_or_none(late) is not None:
                    _write_all(fd, late)  # later lines, whole: their order holds
                else:
                    # A line a dead writer tore, with or without lines after it:
                    # the whole file decides, as a compaction under the lock did.
                    data = build(_read_from(current, 0))
                    if data is None:
                        return False  # damaged: the listing rebuilds it
                    os.ftruncate(fd, 0)
                    os.lseek(fd, 0, os.SEEK_SET)
                    _write_all(fd, data)
                os.fsync(fd)
            self._rename(tmp, current, seen)
            return True

    def _rename(self, tmp: Path, old: int | None, seen: int) -> None:
        """Rename ``tmp`` over the index (``old``, of which ``seen`` bytes went into
        ``tmp``), the lock held; then mark ``?`` what a writer without the lock (no
        fcntl) wrote to the old file meanwhile."""
        os.replace(tmp, self.path)
        if old is not None:
            late = _read_from(old, seen)
            if late:
                self._append(_recheck(late))
        self._sweep_strays()

    def _temp(self) -> Path:
        return self.path.with_name(f".index.{os.getpid()}.{secrets.token_hex(4)}.tmp")

    def _sweep_strays(self) -> None:
        # The temp files of rewrites a crash interrupted. Not recent ones: another
        # process may be building its compaction.
        cutoff = time.time() - STRAY_AGE
        with suppress(OSError):
            for entry in os.scandir(self.path.parent):
                if entry.name.startswith(".index.") and entry.name.endswith(".tmp"):
                    with suppress(OSError):
                        if entry.stat().st_mtime < cutoff:
                            os.unlink(entry.path)


def parse(data: bytes) -> Loaded | None:
    """Fold the index ``data`` whole (a torn last line left out); None if damaged."""
    end = data.rfind(b"\n") + 1
    if end == 0:
        return Loaded({}, set(), False)
    rows = _rows_or_none(data[:end])
    if rows is None:
        return None
    region = region_of(data[: data.index(b"\n") + 1])
    if (
        region is None
        or region.end > end
        or data.count(b"\n", region.start, region.end) != region.lines
        or (region.lines and data[region.end - 1] != ord("\n"))
    ):
        return None
    skip = 1 if region.start else 0
    latest: dict[str, list] = {}
    pending: set[str] = set()
    try:
        key = None
        for row in rows[skip : skip + region.lines]:
            if len(row) != 7 or (key is not None and (row[2], row[0]) <= key):
                return None  # the region's order is what a page relies on
            key = (row[2], row[0])
            latest[row[0]] = row
        for row in rows[skip + region.lines :]:
            if len(row) == 7:
                latest[row[0]] = row
                if pending:
                    pending.discard(row[0])
            elif row[0] == PENDING:
                pending.add(row[1])
            elif row[0] == DELETED:
                latest.pop(row[1], None)
                pending.discard(row[1])
            else:
                return None
        sessions = {sid: SessionInfo(*row) for sid, row in latest.items()}
    except (TypeError, IndexError, KeyError):  # a row of the wrong shape
        return None
    tail_lines = len(rows) - skip - region.lines
    return Loaded(sessions, pending, is_loose(region.lines, tail_lines, end - region.end))


def parse_lines(lines: bytes) -> list[list]:
    """The rows of whole ``lines`` (each ending in a newline), parsed in one go:
    100,000 lines in tens of milliseconds. orjson.JSONDecodeError if one is damaged."""
    parsed = orjson.loads(b"[" + lines[:-1].replace(b"\n", b",") + b"]")
    if not all(isinstance(r, list) and r for r in parsed):
        raise orjson.JSONDecodeError("an index line is not a row", "", 0)
    return parsed


def _rows_or_none(lines: bytes) -> list[list] | None:
    try:
        return parse_lines(lines)
    except orjson.JSONDecodeError:
        return None


def sorted_form(sessions: dict[str, SessionInfo], pending: set[str]) -> bytes:
    """The index holding ``sessions`` in its sorted region, ``pending`` after it."""
    ordered = sorted(sessions.values(), key=lambda i: (i.updated_at, i.id))
    region = b"".join(info_line(i) for i in ordered)
    header = orjson.dumps([HEADER, FORMAT, len(region), len(ordered)]) + b"\n"
    return header + region + b"".join(orjson.dumps([PENDING, p]) + b"\n" for p in sorted(pending))


def _recheck(late: bytes) -> bytes:
    """``?`` lines for the sessions written to the old index during a rewrite.

    Their lines are not copied: a later line for the same session may already be
    in the new file, and copying would put the older one after it. A ``?`` makes
    the next listing read those sessions' logs instead.
    """
    ids: set[str] = set()
    for line in late.split(b"\n"):
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a line still being written: its writer re-checks the path
        if isinstance(row, list) and len(row) in (2, 6, 7):
            ids.add(row[1] if len(row) == 2 else row[0])
    return b"".join(orjson.dumps([PENDING, i]) + b"\n" for i in sorted(ids))


def _read_from(fd: int, offset: int) -> bytes:
    return os.pread(fd, max(os.fstat(fd).st_size - offset, 0), offset)


@contextmanager
def _opened(path: Path) -> Iterator[int | None]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _record(session_id: str, s: Summary) -> bytes:
    row = [session_id, s.created_at, s.updated_at, s.head, s.turns, s.title, s.workspace]
    return orjson.dumps(row) + b"\n"


def info_line(i: SessionInfo) -> bytes:
    row = [i.id, i.created_at, i.updated_at, i.head, i.turns, i.title, i.workspace]
    return orjson.dumps(row) + b"\n"
