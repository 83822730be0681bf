"""The SQLAlchemy store's turn leases: what a crashed holder releases by itself.

On an SQLite file, a lock file beside it (as the SQLite store: SQLite has no lock a
crash releases); on SQLite in memory, a set in this process (no other can open
it). On PostgreSQL, a session-level advisory lock on a connection the holder keeps
checked out: the server releases it when that connection ends, so a holder that
dies frees the session, on this host or another. On MySQL/MariaDB the same with a
named lock (``GET_LOCK``), which the server also drops with its connection; the
name is the server's, so it includes the database's. Leases taken in this process
are kept in a set first, so a second taker here is refused without a round trip.

Unlike the psycopg store (postgres_leases), a lease is not fenced by an epoch: a
holder whose lease connection is killed under it is not stopped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

from sqlalchemy import text

from ..errors import StoreUnavailable, TurnInProgress, store_unavailable
from .ids import file_stem
from .leases import LocalLeases, file_lease
from .sqla_schema import lock_key, lock_name

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from .sqla import SqlAlchemyCheckpointer

Lease = Callable[[str], AbstractAsyncContextManager[None]]


def lease_for(store: SqlAlchemyCheckpointer) -> Lease:
    """The store's ``_lease(session_id)``."""
    path = store.path
    if path is not None:
        folder = path.with_name(path.name + ".locks")

        def on_file(session_id: str) -> AbstractAsyncContextManager[None]:
            try:
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise store_unavailable(folder, "create", exc) from exc
            return file_lease(str(folder / f"{file_stem(session_id)}.turn"), session_id)

        return on_file
    local = LocalLeases()
    if store._sqlite:
        return local.hold
    if store._mysql:
        database = store.engine.url.database or ""
        return ConnectionLeases(
            store.engine,
            store.where,
            local,
            key=lambda session_id: lock_name("turn", database, session_id),
            take="SELECT GET_LOCK(:k, 0)",
            give="SELECT RELEASE_LOCK(:k)",
        ).hold
    schema = store.t.schema or ""
    return ConnectionLeases(
        store.engine,
        store.where,
        local,
        key=lambda session_id: lock_key("turn", schema, session_id),
        take="SELECT pg_try_advisory_lock(:k)",
        give="SELECT pg_advisory_unlock(:k)",
    ).hold


class ConnectionLeases:
    """Leases held as a lock of a connection the holder keeps checked out: a
    PostgreSQL advisory lock, a MySQL/MariaDB named lock. ``take`` tries the lock
    named ``:k`` without waiting (true when got), ``give`` releases it."""

    def __init__(
        self,
        engine: AsyncEngine,
        where: str,
        local: LocalLeases,
        *,
        key: Callable[[str], int | str],
        take: str,
        give: str,
    ) -> None:
        self._engine = engine
        self._where = where
        self._local = local
        self._key = key
        self._take = text(take)
        self._give = text(give)

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        async with self._local.hold(session_id):
            key = self._key(session_id)
            try:
                conn = await self._engine.connect()
            except Exception as exc:
                raise StoreUnavailable(f"cannot take a turn lease in {self._where}: {exc}") from exc
            held = False
            try:
                taken = (await conn.execute(self._take, {"k": key})).scalar()
                await conn.commit()  # the lock is the session's, not the transaction's
                if not taken:
                    raise TurnInProgress(
                        f"a turn is running in session {session_id!r} in another process "
                        "(another editor window, or another host on this database); wait "
                        "for it to end or cancel it there"
                    )
                held = True
                yield
            finally:
                try:
                    if held:
                        await conn.execute(self._give, {"k": key})
                        await conn.commit()
                except BaseException:
                    # Never back in the pool holding the lock: the server drops it
                    # with the connection.
                    await conn.invalidate()
                    raise
                finally:
                    await conn.close()
