"""Sessions in one SQLite database: many processes on one host.

WAL lets readers run beside the writer; each write is a ``BEGIN IMMEDIATE``
transaction, so writers in several processes queue on SQLite's lock (waiting up to
``busy_timeout``) instead of failing, and the ``(session_id, seq)`` primary key
makes a duplicate seq impossible even for a buggy writer. ``synchronous=FULL``:
a commit is on disk before ``append`` returns. The schema is migrated by an
append-only list of steps whose index is ``PRAGMA user_version``.

What the operating system refuses reaches the caller as :class:`StoreUnavailable`
naming the database and the reason; a failed transaction is rolled back whole. A
database this process cannot write (a read-only file or folder) is opened
read-only if its schema is current: reads work, writes raise StoreUnavailable.

``:memory:`` (``sqlite:///:memory:``) is an in-memory database, as in SQLite: it
lives as long as the store, writes no file, and no other store or process sees it.
"""

from __future__ import annotations

import asyncio
import errno
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager, suppress
from pathlib import Path
from typing import TypeVar
from urllib.parse import SplitResult

from .. import events as ev
from ..errors import (
    SessionNotFound,
    StoreBusy,
    StoreUnavailable,
    store_unavailable,
)
from .base import ListCursor, SessionInfo, StoreBase, Truncation
from .ids import file_stem
from .leases import LocalLeases, file_lease
from .sqlite_blobs import SqliteBlobStore
from .summary import Summary, summarize

T = TypeVar("T")
MEMORY = ":memory:"
BUSY_TIMEOUT_MS = 30_000
# What SQLite says (extended codes start so) when the OS refused it: not our bug.
_REFUSED = ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_PERM")

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
    # 3: each session's resume snapshot (session.resume_snapshot), a cache of its log.
    """
    CREATE TABLE snapshots (
        session_id TEXT PRIMARY KEY,
        head INTEGER NOT NULL,
        data BLOB NOT NULL
    )
    """,
    # 4: pages of list_page by key, (updated_at, id) both descending.
    """
    CREATE INDEX sessions_by_page ON sessions (updated_at DESC, id DESC);
    DROP INDEX sessions_by_update
    """,
    # 5: the segments appended after a resume snapshot, in order; writing the
    # snapshot whole drops them.
    """
    CREATE TABLE snapshot_segments (
        session_id TEXT NOT NULL,
        n INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (session_id, n)
    )
    """,
    # 6: the blobs gc stored as deltas, and each one's base (see session.blob_delta):
    # apart from ``blobs`` so that gc reads them without the blobs' bytes; the ids
    # as their 32 bytes, as there is one row for nearly every version of a file.
    """
    CREATE TABLE blob_bases (
        id BLOB PRIMARY KEY,
        base BLOB NOT NULL
    ) WITHOUT ROWID
    """,
]


class SqliteCheckpointer(StoreBase):
    def __init__(self, path: str | os.PathLike[str]) -> None:
        # ":memory:" is SQLite's in-memory database, as in sqlite3.connect: never a file.
        self.path: Path | None = None
        """The database file; None for the in-memory database."""
        if os.fspath(path) != MEMORY:
            self.path = Path(path).expanduser().absolute()
        self._where: Path | str = self.path or MEMORY
        """The database as messages name it."""
        self._mutex = threading.Lock()
        self._read_only: tuple[str, int] | None = None
        """Why this process cannot write the database (the OS's reason and errno)."""
        self._leases = LocalLeases()
        """The in-memory database's turn leases (no other process can open it)."""
        if self.path is None:
            self._conn = self._open_in_memory()
        else:
            self._conn = self._open_file(self.path)
        self.blobs = SqliteBlobStore(self)

    def __repr__(self) -> str:
        return f"SqliteCheckpointer({str(self._where)!r})"

    @property
    def where(self) -> str:
        return str(self._where)

    @property
    def url(self) -> str:
        if self.path is None:
            return f"sqlite:///{MEMORY}"
        return "sqlite://" + self.path.as_uri().removeprefix("file://")

    @property
    def gc_cache(self) -> Path | None:
        """Where collect_garbage keeps what each session referred to (see gc): in
        the folder beside the database that holds its locks and pins."""
        if self.path is None:
            return None
        return self.path.with_name(self.path.name + ".locks") / "gc-refs.json"

    async def truncation_marks(self, session_ids: list[str]) -> dict[str, int]:
        """Per session, its last truncation's id (0: none), in one query, for gc to
        read only the truncations that changed."""
        rows = await asyncio.to_thread(
            self._query, "SELECT session_id, max(id) FROM truncations GROUP BY session_id"
        )
        last = dict(rows)
        return {session_id: last.get(session_id, 0) for session_id in session_ids}

    def _open_in_memory(self) -> sqlite3.Connection:
        """A private database on one connection, gone when the store closes.

        Every thread reaches it through that connection (under ``_mutex``), so no
        shared cache is needed: its table locks would ignore ``busy_timeout``.
        """
        conn = _connect(MEMORY)
        self._conn = conn
        self.setup()
        return conn

    def _open_file(self, path: Path) -> sqlite3.Connection:
        try:
            return self._open_to_write(path)
        except (OSError, sqlite3.OperationalError, StoreUnavailable) as exc:
            # Only a database the OS will not let us write is opened read-only: a
            # full disk at start-up must not leave the store read-only for good.
            self._read_only = _why_read_only(path)
            if self._read_only is None:
                if isinstance(exc, StoreUnavailable) or not _refused(exc):
                    raise
                raise _unavailable(path, "open", exc) from exc
            return self._open_to_read(path)

    def _open_to_write(self, path: Path) -> sqlite3.Connection:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        conn = _connect(str(path))
        try:
            mode = os.stat(path).st_mode & 0o777
            if mode & 0o077:  # private to the user (a read-only file stays read-only)
                with suppress(OSError):  # not ours to change: another user's file
                    os.chmod(path, mode & 0o700)
            # Takes effect only on a new database: gc can give back what packing
            # blobs as deltas freed (see sqlite_blobs); older ones reuse those pages.
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            self._conn = conn
            self.setup()
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_to_read(self, path: Path) -> sqlite3.Connection:
        """The database opened read-only, if its schema needs no migration.

        WAL needs the ``-shm`` file beside the database: in a folder this process
        cannot write, with no other process having the database open, there is none,
        and the database is read as immutable (no locks), as it then is. A ``-wal``
        file there holds commits an immutable read would miss: that raises.
        """
        uri = path.as_uri()
        conn = _connect(f"{uri}?mode=ro", uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.OperationalError as exc:
            conn.close()
            wal = Path(f"{path}-wal")
            if not _refused(exc) or (wal.exists() and wal.stat().st_size):
                raise _unavailable(path, "read", exc) from exc
            conn = _connect(f"{uri}?immutable=1", uri=True)
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < len(MIGRATIONS):
            conn.close()
            reason, code = self._read_only or ("read-only", None)
            raise StoreUnavailable(
                f"cannot migrate {path}: {reason}; its schema (version {version}) "
                f"must become version {len(MIGRATIONS)} before this version can read it",
                code,
            )
        return conn

    def setup(self) -> None:
        """Bring the schema up to date; safe to race from several processes."""
        with self._transaction("migrate") as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for number, step in enumerate(MIGRATIONS[version:], version + 1):
                for statement in filter(str.strip, step.split(";")):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def _transaction(self, action: str = "write to") -> Iterator[sqlite3.Connection]:
        if self._read_only is not None:
            reason, code = self._read_only
            raise StoreUnavailable(f"cannot {action} {self._where}: {reason}", code)
        with self._mutex:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _busy(self._where, action, exc) from None
            try:
                yield self._conn
            except BaseException as exc:
                # SQLite rolls back by itself on some errors (a full disk, I/O).
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError):
                    raise _busy(self._where, action, exc) from None
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise _busy(self._where, action, exc) from None

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._mutex:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                raise _busy(self._where, "read", exc) from None

    # -- the primitives (see StoreBase), on worker threads

    def _read(self, session_id: str, since_seq: int) -> list[ev.Event]:
        rows = self._query(
            "SELECT data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, since_seq),
        )
        return [self.decode(data) for (data,) in rows]

    def _head(self, session_id: str) -> int:
        rows = self._query("SELECT head FROM sessions WHERE id = ?", (session_id,))
        return rows[0][0] if rows else 0

    def _list(self) -> list[SessionInfo]:
        rows = self._query(
            "SELECT id, created_at, updated_at, head, turns, title, workspace FROM sessions "
            "ORDER BY updated_at DESC, id DESC",
        )
        return [SessionInfo(*row) for row in rows]

    def _list_page(self, limit: int, after: ListCursor | None) -> list[SessionInfo]:
        # By key on sessions_by_page: the page's rows, whatever the number of sessions.
        where, args = ("", ()) if after is None else ("WHERE (updated_at, id) < (?, ?) ", after)
        rows = self._query(
            "SELECT id, created_at, updated_at, head, turns, title, workspace FROM sessions "
            f"{where}ORDER BY updated_at DESC, id DESC LIMIT ?",
            (*args, limit),
        )
        return [SessionInfo(*row) for row in rows]

    def _truncations(self, session_id: str) -> list[Truncation]:
        rows = self._query(
            "SELECT id, seq, ts, events FROM truncations WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [self.decode_truncation(*row) for row in rows]

    def _write_snapshot(self, session_id: str, head: int, data: bytes) -> None:
        with self._transaction("write a snapshot to") as db:
            db.execute(
                "INSERT INTO snapshots (session_id, head, data) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET head = excluded.head, data = excluded.data",
                (session_id, head, data),
            )
            # The same transaction: the new snapshot never meets the old one's segments.
            db.execute("DELETE FROM snapshot_segments WHERE session_id = ?", (session_id,))

    def _append_snapshot(self, session_id: str, data: bytes) -> tuple[int, int, int] | None:
        with self._transaction("write a snapshot to") as db:
            row = db.execute(
                "SELECT length(data) FROM snapshots WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            count, size, last = db.execute(
                "SELECT count(*), COALESCE(sum(length(data)), 0), COALESCE(max(n), 0) "
                "FROM snapshot_segments WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            db.execute(
                "INSERT INTO snapshot_segments (session_id, n, data) VALUES (?, ?, ?)",
                (session_id, last + 1, data),
            )
        return count + 1, size + len(data), row[0]

    def _read_snapshot(
        self, session_id: str, limit: int | None
    ) -> tuple[bytes, list[ev.Event]] | None:
        with self._mutex:
            # One read transaction: the snapshot and the log as of one moment.
            try:
                self._conn.execute("BEGIN")
                try:
                    row = self._conn.execute(
                        "SELECT head, rowid FROM snapshots WHERE session_id = ?", (session_id,)
                    ).fetchone()
                    if row:
                        snapshot = self._snapshot_bytes(row[1], limit)
                        if limit is None:
                            snapshot += b"".join(
                                data
                                for (data,) in self._conn.execute(
                                    "SELECT data FROM snapshot_segments WHERE session_id = ? "
                                    "ORDER BY n",
                                    (session_id,),
                                )
                            )
                    rows = (
                        self._conn.execute(
                            "SELECT data FROM events WHERE session_id = ? AND seq >= ? "
                            "ORDER BY seq",
                            (session_id, row[0]),
                        ).fetchall()
                        if row
                        else []
                    )
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                raise _busy(self._where, "read", exc) from None
        if row is None:
            return None
        return snapshot, [self.decode(data) for (data,) in rows]

    def _snapshot_bytes(self, rowid: int, limit: int | None) -> bytes:
        """The snapshot of ``rowid``, its first ``limit`` bytes if given: read as an
        incremental blob, so a header costs its own pages, not the whole value's (a
        ``substr`` of a blob reads all of it first)."""
        with self._conn.blobopen("snapshots", "data", rowid, readonly=True) as blob:
            return blob.read(-1 if limit is None else limit)

    def _lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        if self.path is None:
            return self._leases.hold(session_id)
        # A lock file beside the database: SQLite has no lock a crash releases by itself.
        folder = self.path.with_name(self.path.name + ".locks")
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise store_unavailable(folder, "create", exc) from exc
        return file_lease(str(folder / f"{file_stem(session_id)}.turn"), session_id)

    def _close(self) -> None:
        with self._mutex:
            self._conn.close()

    # -- transactions

    def _summary(self, db: sqlite3.Connection, session_id: str) -> Summary:
        row = db.execute(
            "SELECT created_at, updated_at, title, turns, head, workspace FROM sessions "
            "WHERE id = ?",
            (session_id,),
        ).fetchone()
        if not row:
            return Summary()
        created_at, updated_at, title, turns, head, workspace = row
        return Summary(created_at, updated_at, title, turns, head, workspace, prompts=None)

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
        with self._transaction("append to") as db:
            summary = self._summary(db, session_id)
            head = summary.head
            self.check_head(session_id, expected_head, head)
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
        return [self.decode(data) for (data,) in rows]

    def _delete(self, session_id: str) -> None:
        with self._transaction("delete from") as db:
            if db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
                raise SessionNotFound(session_id)
            db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM truncations WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM snapshots WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM snapshot_segments WHERE session_id = ?", (session_id,))

    def _truncate(self, session_id: str, seq: int, expected_head: int | None) -> Truncation:
        with self._transaction("truncate in") as db:
            summary = self._summary(db, session_id)
            head = summary.head
            if head == 0:
                raise SessionNotFound(session_id)
            self.check_cut(session_id, seq, head, expected_head)
            rows = db.execute(
                "SELECT seq, data FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
            kept = [self.decode(data) for s, data in rows if s <= seq]
            removed_raw = [data for s, data in rows if s > seq]
            (last,) = db.execute(
                "SELECT COALESCE(MAX(id), 0) FROM truncations WHERE session_id = ?", (session_id,)
            ).fetchone()
            now = time.time()
            db.execute(
                "INSERT INTO truncations (session_id, id, seq, ts, events) VALUES (?, ?, ?, ?, ?)",
                (session_id, last + 1, seq, now, self.encode_truncation(removed_raw)),
            )
            db.execute("DELETE FROM events WHERE session_id = ? AND seq > ?", (session_id, seq))
            self._save_summary(db, session_id, summarize(kept))
            removed = [self.decode(data) for data in removed_raw]
            return Truncation(last + 1, seq, now, removed)


def _busy(path: Path | str, action: str, exc: sqlite3.OperationalError) -> Exception:
    if "locked" in str(exc) or "busy" in str(exc):
        return StoreBusy(
            f"{path} stayed locked for {BUSY_TIMEOUT_MS // 1000}s; "
            "another process is holding a write transaction"
        )
    if _refused(exc):
        return _unavailable(path, action, exc)
    return exc


def _connect(database: str, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        database,
        uri=uri,
        isolation_level=None,
        check_same_thread=False,
        timeout=BUSY_TIMEOUT_MS / 1000,
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _refused(exc: Exception) -> bool:
    """Whether the OS refused SQLite (or us) a read or write: a full disk, no permission."""
    if isinstance(exc, (OSError, StoreUnavailable)):
        return True
    return (getattr(exc, "sqlite_errorname", None) or "").startswith(_REFUSED)


def _unavailable(path: Path | str, action: str, exc: Exception) -> StoreUnavailable:
    if isinstance(exc, OSError):
        return store_unavailable(exc.filename or path, action, exc)
    code = errno.ENOSPC if getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" else None
    return StoreUnavailable(f"cannot {action} {path}: {exc}", code)


def _why_read_only(path: Path) -> tuple[str, int] | None:
    """What the OS would say to a write of the database at ``path`` or in its folder
    (its reason and errno); None if it exists and may be written, or does not exist."""
    if not os.path.isfile(path):
        return None
    if hasattr(os, "statvfs") and os.statvfs(path).f_flag & os.ST_RDONLY:
        code = errno.EROFS
    elif not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        code = errno.EACCES
    else:
        return None
    return os.strerror(code), code


def open_url(text: str, parts: SplitResult) -> SqliteCheckpointer:
    """The store for a ``sqlite:`` URL (see open_store)."""
    from .registry import local_path

    path = local_path(text, parts)
    # As written, not unquoted: sqlite:///%3Amemory%3A is a file named /:memory:.
    if parts.path == f"/{MEMORY}":
        return SqliteCheckpointer(MEMORY)
    return SqliteCheckpointer(path)
