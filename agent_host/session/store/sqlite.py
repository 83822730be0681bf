"""Sessions in one SQLite database: many processes on one host.

WAL lets readers run beside the writer; each write is a ``BEGIN IMMEDIATE``
transaction, so writers in several processes queue on SQLite's lock (waiting up to
``busy_timeout``) instead of failing, and the ``(session_id, seq)`` primary key
makes a duplicate seq impossible even for a buggy writer. ``synchronous=FULL``:
a commit is on disk before ``append`` returns. The schema is migrated by an
append-only list of steps whose index is ``PRAGMA user_version``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence, Set
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import orjson

from .. import events as ev
from ..blobs import GcResult, blob_id, check_blob_id, verified
from ..errors import (
    BlobNotFound,
    CheckpointConflictError,
    CheckpointNotFound,
    CorruptLogError,
    SessionNotFound,
    StoreBusy,
)
from .base import (
    SessionInfo,
    Summary,
    Truncation,
    check_events,
    check_session_id,
    file_lease,
    summarize,
)

T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000

# Append only: a released step is never edited; its index + 1 is the schema version.
MIGRATIONS = [
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        head INTEGER NOT NULL,
        turns INTEGER NOT NULL,
        title TEXT NOT NULL
    );
    CREATE INDEX sessions_by_update ON sessions (updated_at DESC);
    CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE truncations (
        session_id TEXT NOT NULL,
        id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        ts REAL NOT NULL,
        events BLOB NOT NULL,
        PRIMARY KEY (session_id, id)
    );
    CREATE TABLE blobs (
        id TEXT PRIMARY KEY,
        data BLOB NOT NULL,
        touched_at REAL NOT NULL
    );
    """,
    # 2: the folder each session was started in, for list() by workspace.
    """
    ALTER TABLE sessions ADD COLUMN workspace TEXT NOT NULL DEFAULT '';
    UPDATE sessions SET workspace = COALESCE((
        SELECT json_extract(CAST(data AS TEXT), '$.workspace') FROM events
        WHERE events.session_id = sessions.id AND events.seq = 1
        AND json_extract(CAST(data AS TEXT), '$.type') = 'session_started'
    ), '')
    """,
]


class SqliteCheckpointer:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().absolute()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._mutex = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        self.path.chmod(0o600)
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self.setup()
        self.blobs = SqliteBlobStore(self)

    def __repr__(self) -> str:
        return f"SqliteCheckpointer({str(self.path)!r})"

    def setup(self) -> None:
        """Bring the schema up to date; safe to race from several processes."""
        with self._transaction() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for number, step in enumerate(MIGRATIONS[version:], version + 1):
                for statement in filter(str.strip, step.split(";")):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._mutex:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _busy(self.path, exc) from None
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                self._conn.execute("ROLLBACK")
                raise _busy(self.path, exc) from None

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._mutex:
            return self._conn.execute(sql, args).fetchall()

    # -- async API

    async def append(
        self, session_id: str, events: Sequence[ev.Event], expected_head: int | None = None
    ) -> int:
        check_session_id(session_id)
        check_events(events)
        return await _run(self._append, session_id, list(events), expected_head)

    async def read(self, session_id: str, since_seq: int = 0) -> list[ev.Event]:
        check_session_id(session_id)
        rows = await _run(
            self._query,
            "SELECT data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, since_seq),
        )
        return [_decode(self.path, data) for (data,) in rows]

    async def head(self, session_id: str) -> int:
        check_session_id(session_id)
        rows = await _run(self._query, "SELECT head FROM sessions WHERE id = ?", (session_id,))
        return rows[0][0] if rows else 0

    async def list(self) -> list[SessionInfo]:
        rows = await _run(
            self._query,
            "SELECT id, created_at, updated_at, head, turns, title, workspace FROM sessions "
            "ORDER BY updated_at DESC",
        )
        return [SessionInfo(*row) for row in rows]

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        await _run(self._delete, session_id)

    async def truncate(
        self, session_id: str, seq: int, expected_head: int | None = None
    ) -> Truncation:
        check_session_id(session_id)
        return await _run(self._truncate, session_id, seq, expected_head)

    async def truncations(self, session_id: str) -> list[Truncation]:
        check_session_id(session_id)
        rows = await _run(
            self._query,
            "SELECT id, seq, ts, events FROM truncations WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [
            Truncation(tid, seq, ts, [ev.from_dict(d) for d in orjson.loads(data)])
            for tid, seq, ts, data in rows
        ]

    def turn_lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        check_session_id(session_id)
        # A lock file beside the database: SQLite has no lock a crash releases by itself.
        folder = self.path.with_name(self.path.name + ".locks")
        folder.mkdir(mode=0o700, exist_ok=True)
        return file_lease(str(folder / f"{session_id}.turn"), session_id)

    async def close(self) -> None:
        with self._mutex:
            self._conn.close()

    # -- transactions

    def _summary(self, db: sqlite3.Connection, session_id: str) -> Summary:
        row = db.execute(
            "SELECT created_at, updated_at, title, turns, head, workspace FROM sessions "
            "WHERE id = ?",
            (session_id,),
        ).fetchone()
        return Summary(*row, prompts=None) if row else Summary()

    def _save_summary(self, db: sqlite3.Connection, session_id: str, s: Summary) -> None:
        db.execute(
            "INSERT INTO sessions (id, created_at, updated_at, head, turns, title, workspace) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "created_at = excluded.created_at, updated_at = excluded.updated_at, "
            "head = excluded.head, turns = excluded.turns, title = excluded.title, "
            "workspace = excluded.workspace",
            (session_id, s.created_at, s.updated_at, s.head, s.turns, s.title, s.workspace),
        )

    def _append(self, session_id: str, events: list[ev.Event], expected_head: int | None) -> int:
        ts = time.time()
        with self._transaction() as db:
            summary = self._summary(db, session_id)
            head = summary.head
            if expected_head is not None and expected_head != head:
                raise CheckpointConflictError(session_id, expected_head, head)
            if not events:
                return head
            if any(type(e) in (ev.Restore, ev.RestoreUndone) for e in events):
                # The row does not know which prompts a restore hides: fold the log.
                summary = summarize(self._events(db, session_id))
            rows = []
            for n, event in enumerate(events, head + 1):
                rows.append((session_id, n, ev.encode(event, n, ts)))
                summary.add(ev.stamp(event, n, ts))
            db.executemany("INSERT INTO events (session_id, seq, data) VALUES (?, ?, ?)", rows)
            self._save_summary(db, session_id, summary)
            return summary.head

    def _events(self, db: sqlite3.Connection, session_id: str) -> list[ev.Event]:
        rows = db.execute(
            "SELECT data FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        return [_decode(self.path, data) for (data,) in rows]

    def _delete(self, session_id: str) -> None:
        with self._transaction() as db:
            if db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
                raise SessionNotFound(session_id)
            db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM truncations WHERE session_id = ?", (session_id,))

    def _truncate(self, session_id: str, seq: int, expected_head: int | None) -> Truncation:
        with self._transaction() as db:
            summary = self._summary(db, session_id)
            head = summary.head
            if head == 0:
                raise SessionNotFound(session_id)
            if expected_head is not None and expected_head != head:
                raise CheckpointConflictError(session_id, expected_head, head)
            if not isinstance(seq, int) or not 0 <= seq <= head:
                raise CheckpointNotFound(
                    f"cannot truncate session {session_id!r} to seq {seq!r}: "
                    f"it must be between 0 and the head, {head}"
                )
            rows = db.execute(
                "SELECT seq, data FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
            kept = [_decode(self.path, data) for s, data in rows if s <= seq]
            removed_raw = [data for s, data in rows if s > seq]
            (last,) = db.execute(
                "SELECT COALESCE(MAX(id), 0) FROM truncations WHERE session_id = ?", (session_id,)
            ).fetchone()
            now = time.time()
            db.execute(
                "INSERT INTO truncations (session_id, id, seq, ts, events) VALUES (?, ?, ?, ?, ?)",
                (session_id, last + 1, seq, now, b"[" + b",".join(removed_raw) + b"]"),
            )
            db.execute("DELETE FROM events WHERE session_id = ? AND seq > ?", (session_id, seq))
            self._save_summary(db, session_id, summarize(kept))
            removed = [_decode(self.path, data) for data in removed_raw]
            return Truncation(last + 1, seq, now, removed)


class SqliteBlobStore:
    """Blobs in the same database as the events, so one file holds a whole store."""

    def __init__(self, store: SqliteCheckpointer) -> None:
        self._store = store

    async def put(self, data: bytes) -> str:
        blob = blob_id(data)
        await _run(self._put, blob, bytes(data))
        return blob

    def _put(self, blob: str, data: bytes) -> None:
        with self._store._transaction() as db:
            db.execute(
                "INSERT INTO blobs (id, data, touched_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET touched_at = excluded.touched_at",
                (blob, data, time.time()),
            )

    async def get(self, blob: str) -> bytes:
        check_blob_id(blob)
        rows = await _run(self._store._query, "SELECT data FROM blobs WHERE id = ?", (blob,))
        if not rows:
            raise BlobNotFound(f"blob {blob} is not in the blob store")
        return verified(blob, bytes(rows[0][0]), self._store.path)

    async def exists(self, blob: str) -> bool:
        check_blob_id(blob)
        rows = await _run(self._store._query, "SELECT 1 FROM blobs WHERE id = ?", (blob,))
        return bool(rows)

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        return await _run(self._gc, referenced, grace_seconds)

    def _gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        cutoff = time.time() - grace_seconds
        with self._store._transaction() as db:
            rows = db.execute("SELECT id, touched_at, length(data) FROM blobs").fetchall()
            dead = [(b, n) for b, t, n in rows if b not in referenced and t < cutoff]
            db.executemany("DELETE FROM blobs WHERE id = ?", [(b,) for b, _ in dead])
        return GcResult(len(dead), len(rows) - len(dead), sum(size for _, size in dead))


def _decode(path: Path, data: bytes) -> ev.Event:
    try:
        return ev.from_dict(orjson.loads(data))
    except Exception as exc:
        raise CorruptLogError(f"{path}: an event could not be read: {exc}") from exc


def _busy(path: Path, exc: sqlite3.OperationalError) -> Exception:
    if "locked" in str(exc) or "busy" in str(exc):
        return StoreBusy(
            f"{path} stayed locked for {BUSY_TIMEOUT_MS // 1000}s; "
            "another process is holding a write transaction"
        )
    return exc


async def _run(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(fn, *args)
