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
