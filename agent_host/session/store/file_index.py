"""The file store's session index: what ``list()`` reads instead of every log.

``index.jsonl`` is an append-only file of small JSON arrays, newest last:

* ``[id, created_at, updated_at, head, turns, title, workspace]`` -- the session as
  of a write (an index of 6-field rows, from before the workspace, is rebuilt);
* ``["?", id]`` -- a write to the session is about to happen;
* ``["!", id]`` -- the session was deleted.

A write announces itself before touching the log and records the result after,
so a writer that dies in between leaves a ``?`` with no record after it; ``list()``
then reads that one log and writes the record the writer could not. The index is
a cache of the logs: lost or damaged, it is rebuilt from them; holding far more
lines than sessions, it is rewritten compactly. Index lines are not fsynced: the
logs are the truth, and a lost line is repaired like a dead writer's.

Writers hold ``index.lock`` shared while they write their lines; a rewrite holds
it exclusive while it reads the old file, writes the new one and renames it into
place, so no line can go to a file that is being replaced. (Writers once checked,
after writing, whether the path had been renamed under them; the stat that took
cost each append's fdatasync a journal commit, see log_file. A rewrite still marks
``?`` every session such an older writer wrote to the old file meanwhile.)

A record that cannot be written (a full disk) after its log was changed leaves the
``?`` as the last word on that session, which ``list()`` repairs like a dead
writer's; a line cut short by the disk damages the index, which is rebuilt.
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_left, insort
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import orjson

from . import locking
from .info import SessionInfo
from .summary import Summary

PENDING = "?"
DELETED = "!"

Loaded = tuple[dict[str, SessionInfo], set[str], int]


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
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
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
        """Sessions, ids with a write that never finished, and the line count.

        None when the index is missing or damaged and must be rebuilt.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return parse(data)

    def compact(self) -> None:
        """Rewrite the index with one record per session, if it is still loose."""

        def compacted(data: bytes) -> bytes | None:
            loaded = parse(data)
            if loaded is None:
                return None
            sessions, pending, lines = loaded
            if lines <= compact_threshold(len(sessions)):
                return None
            return b"".join(info_line(i) for i in sessions.values()) + b"".join(
                orjson.dumps([PENDING, p]) + b"\n" for p in pending
            )

        self._rewrite(compacted)

    def rebuild(self, records: Callable[[], bytes]) -> None:
        """Replace the index with ``records()``: lines folded from the logs."""
        self._rewrite(lambda _old: records())

    def _rewrite(self, build: Callable[[bytes], bytes | None]) -> None:
        with locking.hold(self._lock_path):
            try:
                old = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                old = None
            try:
                seen = b"" if old is None else _read_from(old, 0)
                data = build(seen)
                if data is None:
                    return
                tmp = self.path.with_name(f".index.{os.getpid()}.tmp")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
                try:
                    try:
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view) :]
                    finally:
                        os.close(fd)
                    os.replace(tmp, self.path)
                except BaseException:
                    tmp.unlink(missing_ok=True)  # a full disk: the old index stays in use
                    raise
                if old is not None:
                    late = _read_from(old, len(seen))
                    if late:
                        self._append(_recheck(late))
            finally:
                if old is not None:
                    os.close(old)


def parse(data: bytes) -> Loaded | None:
    end = data.rfind(b"\n")
    body = data[:end] if end >= 0 else b""
    if not body:
        return {}, set(), 0
    try:
        # One parse for the whole file: 10,000 sessions load in milliseconds.
        rows = orjson.loads(b"[" + body.replace(b"\n", b",") + b"]")
    except orjson.JSONDecodeError:
        return None
    latest: dict[str, list] = {}
    pending: set[str] = set()
    try:
        for row in rows:
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
    return sessions, pending, len(rows)


def _recheck(late: bytes) -> bytes:
    """``?`` lines for the sessions written to the old index during a rewrite.

    Their lines are not copied: a later line for the same session may already be
    in the new file, and copying would put the older one after it. A ``?`` makes
    the next ``list()`` read those sessions' logs instead.
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


def compact_threshold(sessions: int) -> int:
    # Every write adds two lines; past 1.25 lines a session, list() pays more to
    # parse the index than a compaction costs once.
    return sessions + sessions // 4 + 100


def _read_from(fd: int, offset: int) -> bytes:
    return os.pread(fd, max(os.fstat(fd).st_size - offset, 0), offset)


def _record(session_id: str, s: Summary) -> bytes:
    row = [session_id, s.created_at, s.updated_at, s.head, s.turns, s.title, s.workspace]
    return orjson.dumps(row) + b"\n"


def info_line(i: SessionInfo) -> bytes:
    row = [i.id, i.created_at, i.updated_at, i.head, i.turns, i.title, i.workspace]
    return orjson.dumps(row) + b"\n"


class IndexView:
    """This process's fold of the index, kept current by reading only the lines
    appended since it last looked (a rewrite, a new file, starts it afresh), with
    the sessions in key order: a page of ``list_page`` or one session's record then
    costs the lines written since and the page, not the whole index.

    Shared by the store's worker threads, hence the lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._forget()

    def _forget(self) -> None:
        self._inode: int | None = None
        self._offset = 0
        self.sessions: dict[str, SessionInfo] = {}
        self.pending: set[str] = set()
        self.lines = 0
        self._keys: list[tuple[float, str]] = []
        """(updated_at, id) of every session, ascending."""

    def page(self, limit: int, after: tuple[float, str] | None) -> list[SessionInfo] | None:
        """The sessions of ``list_page``; None when the index cannot answer alone (it
        is missing, damaged, loose, or a write to some session has not been recorded)."""
        with self._lock:
            if not self._refresh() or self.pending:
                return None
            if self.lines > compact_threshold(len(self.sessions)):
                return None
            end = len(self._keys) if after is None else bisect_left(self._keys, tuple(after))
            keys = self._keys[max(end - limit, 0) : end]
            return [self.sessions[sid] for _, sid in reversed(keys)]

    def info(self, session_id: str) -> SessionInfo | None:
        """The index's record of ``session_id``; None if it has none it vouches for."""
        with self._lock:
            if not self._refresh() or session_id in self.pending:
                return None
            return self.sessions.get(session_id)

    def _refresh(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            self._forget()
            return False
        try:
            stat = os.fstat(fd)
            if stat.st_ino != self._inode or stat.st_size < self._offset:
                self._forget()
                self._inode = stat.st_ino
            data = os.pread(fd, stat.st_size - self._offset, self._offset)
        finally:
            os.close(fd)
        end = data.rfind(b"\n")
        if end < 0:
            return True  # nothing new, or a line still being written
        try:
            rows = orjson.loads(b"[" + data[:end].replace(b"\n", b",") + b"]")
            self._apply(rows, whole=self._offset == 0 or len(rows) > len(self._keys) // 8)
        except (orjson.JSONDecodeError, TypeError, IndexError, KeyError):
            self._forget()  # damaged: list() rebuilds it
            return False
        self._offset += end + 1
        self.lines += len(rows)
        return True

    def _apply(self, rows: list[list], whole: bool) -> None:
        """Fold ``rows`` in; ``whole``: many, so sort the keys once after."""
        sessions, pending, keys = self.sessions, self.pending, self._keys
        for row in rows:
            if len(row) == 7:
                info = SessionInfo(*row)
                old = sessions.get(info.id)
                if not whole:
                    if old is not None:
                        _drop(keys, (old.updated_at, old.id))
                    insort(keys, (info.updated_at, info.id))
                sessions[info.id] = info
                pending.discard(info.id)
            elif row[0] == PENDING:
                pending.add(row[1])
            elif row[0] == DELETED:
                old = sessions.pop(row[1], None)
                if old is not None and not whole:
                    _drop(keys, (old.updated_at, old.id))
                pending.discard(row[1])
            else:
                raise KeyError(row[0])
        if whole:
            self._keys = sorted((i.updated_at, i.id) for i in sessions.values())


def _drop(keys: list[tuple[float, str]], key: tuple[float, str]) -> None:
    at = bisect_left(keys, key)
    if at < len(keys) and keys[at] == key:
        del keys[at]
