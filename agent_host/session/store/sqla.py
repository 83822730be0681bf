"""Sessions in a database SQLAlchemy's async Core reaches: an app's own engine, or a
``sqlite+aiosqlite://``, ``postgresql+asyncpg://``, ``mysql+aiomysql://`` or
``mariadb+aiomysql://`` URL (``pip install 'agent-host[sqlalchemy]'``).

The counterpart of the OpenAI Agents SDK's ``SQLAlchemySession``: an app hands over
the engine it already has (``SqlAlchemyCheckpointer(engine)``), or a URL
(:meth:`SqlAlchemyCheckpointer.from_url`), and the tables (all named
``agent_host_*``, see sqla_schema) are created on first use when ``create_tables``.

Each write is one transaction: it locks the session's row (made first, with head
0, if new; a conflict or an empty append rolls that back), checks the head, inserts
the events -- the ``(session_id, seq)`` primary key makes a duplicate seq impossible
-- and updates the summary ``list()`` reads. On SQLite the transaction is ``BEGIN
IMMEDIATE``: writers in several processes queue on SQLite's lock instead of failing
on a read lock they cannot upgrade. Blobs are a table (sqla_blobs); turn leases are
what a crash releases (sqla_leases). Resume snapshots are not kept: every resume
folds the log (always correct, only slower).

On MySQL and MariaDB (InnoDB) the store's connections read committed data (READ
COMMITTED, as PostgreSQL does by default): REPEATABLE READ's gap locks would make
two writers creating one session deadlock instead of queueing on its row.

Only SQLAlchemy and the driver are imported, on first use of this module: the
registry imports it when a URL of its schemes is opened.
"""

from __future__ import annotations

import asyncio
import builtins
import importlib
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from .. import events as ev
from ..errors import SessionNotFound, StoreUnavailable, UnsupportedStore
from .base import ListCursor, SessionInfo, StoreBase, Truncation, check_events, check_session_id
from .sqla_blobs import SqlAlchemyBlobStore
from .sqla_leases import lease_for
from .sqla_schema import MYSQL, Tables, migrate
from .summary import Summary, summarize

DIALECTS = ("sqlite", "postgresql", *MYSQL)
BUSY_TIMEOUT = 30.0
"""Seconds an SQLite writer waits for another process's write transaction."""
READ_COMMITTED = "READ COMMITTED"


class SqlAlchemyCheckpointer(StoreBase):
    """A store on an SQLAlchemy :class:`AsyncEngine` (Core, not the ORM).

    ``engine`` stays the caller's: :meth:`close` leaves it open. ``schema`` (on
    PostgreSQL) puts the tables in a schema of their own, created if need be."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        create_tables: bool = True,
        schema: str | None = None,
        _owned: bool = False,
    ) -> None:
        if not isinstance(engine, AsyncEngine):
            raise TypeError(
                f"engine must be an SQLAlchemy AsyncEngine (create_async_engine), "
                f"not {type(engine).__name__}"
            )
        dialect = engine.dialect.name
        if dialect not in DIALECTS:
            raise UnsupportedStore(
                f"the SQLAlchemy store runs on SQLite (sqlite+aiosqlite://), PostgreSQL "
                f"(postgresql+asyncpg://) and MySQL/MariaDB (mysql+aiomysql://), not {dialect}"
            )
        if schema is not None and dialect != "postgresql":
            raise UnsupportedStore("schema= is for PostgreSQL only")
        self._mysql = dialect in MYSQL
        if self._mysql and not _owned:  # the app's engine, read committed for this store
            engine = engine.execution_options(isolation_level=READ_COMMITTED)
        self.engine = engine
        self._owned = _owned
        self._create = create_tables
        self._sqlite = dialect == "sqlite"
        database = engine.url.database or ""
        self.path: Path | None = None
        """The SQLite database file; None for PostgreSQL or an in-memory database."""
        if self._sqlite and database not in ("", ":memory:") and not database.startswith("file:"):
            self.path = Path(database).expanduser().absolute()
        self._memory = self._sqlite and self.path is None
        self.t = Tables(schema)
        self._ready = False
        self._setup_lock: asyncio.Lock | None = None
        # One in-memory SQLite database is one connection: take turns on it. Writers
        # to a file take turns here too, rather than on SQLite's busy loop.
        self._serial: asyncio.Lock | None = None
        self.blobs = SqlAlchemyBlobStore(self)
        self._leases = lease_for(self)

    @classmethod
    def from_url(
        cls, url: str, *, create_tables: bool = True, **engine_options: Any
    ) -> SqlAlchemyCheckpointer:
        """A store on a new engine for ``url`` (``?schema=name`` puts the tables in
        that PostgreSQL schema), disposed of by :meth:`close`."""
        parsed = make_url(url)
        schema = parsed.query.get("schema")
        if isinstance(schema, tuple):
            schema = schema[-1]
        parsed = parsed.difference_update_query(["schema"])
        backend = parsed.get_backend_name()
        if backend == "sqlite":
            engine_options.setdefault("connect_args", {}).setdefault("timeout", BUSY_TIMEOUT)
        elif backend in MYSQL:
            if "charset" not in parsed.query:  # titles and ids in any script
                engine_options.setdefault("connect_args", {}).setdefault("charset", "utf8mb4")
            engine_options.setdefault("isolation_level", READ_COMMITTED)
            # The server closes idle connections (wait_timeout): never hand out a dead one.
            engine_options.setdefault("pool_pre_ping", True)
        try:
            engine = create_async_engine(parsed, **engine_options)
        except Exception as exc:  # a driver not installed, not async, a bad URL
            raise UnsupportedStore(f"cannot open store URL {_hidden(url)!r}: {exc}") from exc
        return cls(engine, create_tables=create_tables, schema=schema, _owned=True)

    def __repr__(self) -> str:
        return f"SqlAlchemyCheckpointer({self.url!r})"

    @property
    def url(self) -> str:
        if self.path is not None:  # absolute (four slashes), whatever the engine was given
            return f"{self.engine.url.drivername}:///{self.path}"
        shown = self.engine.url.render_as_string(hide_password=True)
        if self.t.schema:
            shown += ("&" if "?" in shown else "?") + f"schema={self.t.schema}"
        return shown

    @property
    def where(self) -> str:
        return self.url

    # -- connections and transactions

    async def _setup(self) -> None:
        if self._ready:
            return
        if self._setup_lock is None:
            self._setup_lock = asyncio.Lock()
            self._serial = asyncio.Lock()
        async with self._setup_lock:
            if self._ready:
                return
            async with self._connect("set up the tables in", write=True) as conn:
                await migrate(conn, self.t, self._create, self.where)
                await conn.commit()
            if self.path is not None and self._owned:
                await self._wal()
            self._ready = True

    async def _wal(self) -> None:
        """WAL on a database file this store opened: readers beside the writer. Set
        once, kept by the file; while another process switches it (or holds it
        busy), left to that one: the store is correct in either mode."""
        async with self.engine.connect() as conn:
            mode = (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar()
            if str(mode).lower() != "wal":
                with suppress(DBAPIError):
                    await conn.exec_driver_sql("PRAGMA journal_mode = WAL")

    @asynccontextmanager
    async def _connect(self, action: str, write: bool = False) -> AsyncIterator[AsyncConnection]:
        """A connection in a transaction, rolled back unless the caller commits;
        what the database or network refuses comes out as StoreUnavailable."""
        if self.path is not None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        serial = self._serial if (self._memory or (write and self._sqlite)) else None
        try:
            if serial is not None:
                await serial.acquire()
            try:
                async with self.engine.connect() as conn:
                    if write and self._sqlite:
                        await conn.exec_driver_sql("BEGIN IMMEDIATE")
                    yield conn
            finally:
                if serial is not None:
                    serial.release()
        except IntegrityError:
            raise
        except (DBAPIError, OSError) as exc:
            reason = getattr(exc, "orig", None) or exc
            raise StoreUnavailable(f"cannot {action} {self.where}: {reason}") from exc

    async def _read_rows(self, action: str, statement: Any) -> list[Any]:
        await self._setup()
        async with self._connect(action) as conn:
            return list((await conn.execute(statement)).all())

    # -- the protocol

    async def append(
        self, session_id: str, events: Sequence[ev.Event], expected_head: int | None = None
    ) -> int:
        check_session_id(session_id)
        events = list(events)
        check_events(events)
        await self._setup()
        ts = time.time()
        s = self.t.sessions
        async with self._connect("append to", write=True) as conn:
            summary = await self._lock(conn, session_id)
            head = summary.head
            self.check_head(session_id, expected_head, head)
            if not events:
                return head  # rolled back: the row made for a new session goes
            if any(type(e) in (ev.Restore, ev.RestoreUndone) for e in events):
                # The row does not know which prompts a restore hides: fold the log.
                summary = summarize(await self._events(conn, session_id, 0))
            rows = []
            for n, event in enumerate(events, head + 1):
                rows.append({"session_id": session_id, "seq": n, "data": ev.encode(event, n, ts)})
                summary.add(ev.stamp(event, n, ts))
            await conn.execute(insert(self.t.events), rows)
            await conn.execute(update(s).where(s.c.id == session_id).values(**_row(summary)))
            await conn.commit()
            return summary.head

    async def _lock(self, conn: AsyncConnection, session_id: str) -> Summary:
        """The session's summary, its row locked (made with head 0 if new)."""
        s = self.t.sessions
        query = select(
            s.c.created_at, s.c.updated_at, s.c.title, s.c.turns, s.c.head, s.c.workspace
        ).where(s.c.id == session_id)
        if not self._sqlite:  # SQLite's BEGIN IMMEDIATE already locks the database
            query = query.with_for_update()
        row = (await conn.execute(query)).first()
        if row is None:
            # A new session: its row first, then locked. A writer making it at the
            # same time wins the insert; this one then waits on its lock.
            blank = {"created_at": 0.0, "updated_at": 0.0, "head": 0, "turns": 0}
            await conn.execute(
                self._insert_ignore(s).values(id=session_id, title="", workspace="", **blank)
            )
            row = (await conn.execute(query)).one()
        created, updated, title, turns, head, workspace = row
        return Summary(created, updated, title, turns, head, workspace, prompts=None)

    def _insert(self, table: Any) -> Any:
        """The dialect's own INSERT, which has its upsert clause."""
        name = "mysql" if self._mysql else self.engine.dialect.name
        return importlib.import_module(f"sqlalchemy.dialects.{name}").insert(table)

    def _insert_ignore(self, table: Any) -> Any:
        statement = self._insert(table)
        if self._mysql:  # not INSERT IGNORE, which also makes other errors warnings
            first = next(iter(table.primary_key.columns))
            return statement.on_duplicate_key_update({first.name: first})
        return statement.on_conflict_do_nothing()

    def upsert(self, table: Any, key: list[str], keep: list[str]) -> Any:
        """An insert that, on a row with the same ``key`` columns, sets ``keep``."""
        statement = self._insert(table)
        if self._mysql:  # the key is the table's primary key
            return statement.on_duplicate_key_update({c: statement.inserted[c] for c in keep})
        return statement.on_conflict_do_update(
            index_elements=key, set_={c: statement.excluded[c] for c in keep}
        )

    async def _events(self, conn: AsyncConnection, session_id: str, since: int) -> list[ev.Event]:
        e = self.t.events
        rows = await conn.execute(
            select(e.c.data).where(e.c.session_id == session_id, e.c.seq > since).order_by(e.c.seq)
        )
        return self.decode_many([bytes(data) for (data,) in rows])

    async def read(self, session_id: str, since_seq: int = 0) -> list[ev.Event]:
        check_session_id(session_id)
        await self._setup()
        async with self._connect("read") as conn:
            return await self._events(conn, session_id, since_seq)

    async def head(self, session_id: str) -> int:
        check_session_id(session_id)
        s = self.t.sessions
        rows = await self._read_rows("read", select(s.c.head).where(s.c.id == session_id))
        return int(rows[0][0]) if rows else 0

    def _listing(self) -> Any:
        s = self.t.sessions
        return select(
            s.c.id, s.c.created_at, s.c.updated_at, s.c.head, s.c.turns, s.c.title, s.c.workspace
        ).order_by(s.c.updated_at.desc(), s.c.id.desc())

    async def list(self) -> builtins.list[SessionInfo]:
        rows = await self._read_rows("list sessions in", self._listing())
        return [SessionInfo(*row) for row in rows]

    async def list_page(
        self, limit: int, after: ListCursor | None = None
    ) -> builtins.list[SessionInfo]:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        query = self._listing().limit(limit)
        if after is not None:
            s = self.t.sessions
            updated, last = after
            query = query.where(
                or_(s.c.updated_at < updated, and_(s.c.updated_at == updated, s.c.id < last))
            )
        rows = await self._read_rows("list sessions in", query)
        return [SessionInfo(*row) for row in rows]

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        await self._setup()
        t = self.t
        async with self._connect("delete from", write=True) as conn:
            gone = await conn.execute(delete(t.sessions).where(t.sessions.c.id == session_id))
            if gone.rowcount == 0:
                raise SessionNotFound(session_id)
            await conn.execute(delete(t.events).where(t.events.c.session_id == session_id))
            await conn.execute(
                delete(t.truncations).where(t.truncations.c.session_id == session_id)
            )
            await conn.commit()

    async def truncate(
        self, session_id: str, seq: int, expected_head: int | None = None
    ) -> Truncation:
        check_session_id(session_id)
        await self._setup()
        t = self.t
        e, s = t.events, t.sessions
        async with self._connect("truncate in", write=True) as conn:
            query = select(s.c.head).where(s.c.id == session_id)
            if not self._sqlite:
                query = query.with_for_update()
            head = (await conn.execute(query)).scalar() or 0
            if head == 0:
                raise SessionNotFound(session_id)
            self.check_cut(session_id, seq, head, expected_head)
            rows = (
                await conn.execute(
                    select(e.c.seq, e.c.data).where(e.c.session_id == session_id).order_by(e.c.seq)
                )
            ).all()
            kept = self.decode_many([bytes(data) for n, data in rows if n <= seq])
            stash = self.encode_truncation([bytes(data) for n, data in rows if n > seq])
            tr = t.truncations
            last = (
                await conn.execute(
                    select(func.coalesce(func.max(tr.c.id), 0)).where(tr.c.session_id == session_id)
                )
            ).scalar_one()
            now = time.time()
            await conn.execute(
                insert(tr).values(session_id=session_id, id=last + 1, seq=seq, ts=now, events=stash)
            )
            await conn.execute(delete(e).where(e.c.session_id == session_id, e.c.seq > seq))
            await conn.execute(
                update(s).where(s.c.id == session_id).values(**_row(summarize(kept)))
            )
            await conn.commit()
        return self.decode_truncation(last + 1, seq, now, stash)

    async def truncations(self, session_id: str) -> builtins.list[Truncation]:
        check_session_id(session_id)
        tr = self.t.truncations
        rows = await self._read_rows(
            "read",
            select(tr.c.id, tr.c.seq, tr.c.ts, tr.c.events)
            .where(tr.c.session_id == session_id)
            .order_by(tr.c.id),
        )
        return [self.decode_truncation(i, n, ts, bytes(data)) for i, n, ts, data in rows]

    async def write_snapshot(self, session_id: str, head: int, data: bytes) -> None:
        check_session_id(session_id)  # kept nowhere: every resume folds the log

    async def append_snapshot(self, session_id: str, data: bytes) -> tuple[int, int, int] | None:
        check_session_id(session_id)  # no snapshot to append to
        return None

    async def read_snapshot(
        self, session_id: str, limit: int | None = None
    ) -> tuple[bytes, builtins.list[ev.Event]] | None:
        check_session_id(session_id)
        return None

    def _lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        return self._leases(session_id)

    async def close(self) -> None:
        if self._owned:
            await self.engine.dispose()


def _text(value: str) -> str:
    # PostgreSQL's text cannot hold NUL (the events, bytes, keep it): list() shows U+FFFD.
    return value.replace("\0", "\ufffd")


def _row(s: Summary) -> dict[str, Any]:
    return {
        "created_at": s.created_at,
        "updated_at": s.updated_at,
        "head": s.head,
        "turns": s.turns,
        "title": _text(s.title),
        "workspace": _text(s.workspace),
    }


def _hidden(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparsable URL>"


def open_url(text: str, parts: SplitResult) -> SqlAlchemyCheckpointer:
    """The store for a ``sqlite+aiosqlite:``, ``postgresql+asyncpg:``, ``mysql+aiomysql:``
    or ``mariadb+aiomysql:`` URL (see open_store)."""
    return SqlAlchemyCheckpointer.from_url(text)


def open_engine(engine: AsyncEngine) -> SqlAlchemyCheckpointer:
    """The store on an app's engine, as ``open_store(engine)`` gives it."""
    return SqlAlchemyCheckpointer(engine)
