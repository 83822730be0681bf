"""Turn leases across hosts: session-level advisory locks on a connection of their own.

The server releases a lock when its session ends, so a holder that dies -- or whose
connection drops -- frees the session by itself. Advisory locks are re-entrant
within one connection, so leases taken in this process are also kept in a set
(LocalLeases) first: a second taker here is refused before the database is asked.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import psycopg

from ..errors import TurnInProgress
from .leases import LocalLeases
from .postgres_conn import Target, connect, unavailable
from .postgres_schema import lock_key


class AdvisoryLeases:
    def __init__(self, target: Target) -> None:
        self._target = target
        self._local = LocalLeases()
        self._conn: psycopg.Connection | None = None
        self._mutex = threading.Lock()

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        async with self._local.hold(session_id):
            key = lock_key("turn", self._target.schema, session_id)
            if not await asyncio.to_thread(self._try, key):
                raise TurnInProgress(
                    f"a turn is running in session {session_id!r} in another process "
                    "(another editor window, or another host on this database); wait "
                    "for it to end or cancel it there"
                )
            try:
                yield
            finally:
                await asyncio.to_thread(self._release, key)

    def _try(self, key: int) -> bool:
        with self._mutex:
            for attempt in (1, 2):
                conn = self._connection()
                try:
                    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                    return bool(row and row[0])
                except psycopg.OperationalError as exc:
                    # The lease connection died (its locks went with it): one fresh try.
                    self._drop()
                    if attempt == 2:
                        raise unavailable(self._target, "take a turn lease in", exc) from exc
            return False

    def _release(self, key: int) -> None:
        with self._mutex:
            if self._conn is None:
                return  # the connection died: the server released the lock
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except psycopg.Error:
                self._drop()

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._target, autocommit=True)
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            with suppress(psycopg.Error):
                self._conn.close()
        self._conn = None

    def close(self) -> None:
        with self._mutex:
            self._drop()
