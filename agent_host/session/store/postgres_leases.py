"""Turn leases across hosts: session-level advisory locks on a connection of their
own, fenced by epochs.

The server releases a lock when its connection ends, so a holder that dies frees
the session by itself -- but so does a killed backend, an idle timeout or a network
failure under a holder that is alive and mid-turn. So each take of a lease gets a
new epoch in the database (take_lease, migration 5), and every write the holder
makes under it carries that epoch: once another holder has taken the lease, the old
holder's writes are refused in the same statement (LeaseLost). Two turns never
interleave in a log, whatever happens to connections.

The holder also watches its lease connection: a round trip every CHECK_SECONDS, with
keepalives and a TCP user timeout (LEASE_PARAMS) under it so a dead network fails it
in bounded time. A connection found dead is replaced and each lease taken back,
with its own epoch, if no one took it meanwhile. A lease someone else took, or that
cannot be taken back within RETAKE_GRACE, is lost: this store writes nothing more
under it, its holder's task is cancelled, and its ``async with`` raises LeaseLost.

Advisory locks are re-entrant within one connection, so leases taken in this
process are also kept in a set (LocalLeases) first: a second taker here is refused
before the database is asked.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import psycopg
from psycopg import sql

from ..errors import LeaseLost, StoreUnavailable, TurnInProgress
from .leases import LocalLeases, holder_stamp, who_holds
from .postgres_conn import Target, connect, unavailable
from .postgres_schema import lock_key

log = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
"""How often a holder checks that its lease connection is alive."""
LEASE_PARAMS = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,  # ms: a check unanswered this long fails
}
"""libpq parameters of the lease connection: a dead network fails it within 10 s."""
APP_PREFIX = "agent-host lease "
"""The lease connection's application_name: this prefix, then ``pid host``, which
a refused taker reads back to say who holds the session."""
RETAKE_GRACE = 10.0
"""Seconds a holder keeps trying to reach the server again before its leases are lost."""


class _Holding:
    """One lease this store holds: touched by the watchdog thread (``lost``) and by
    the holder's event loop (the rest)."""

    __slots__ = (
        "session_id",
        "key",
        "epoch",
        "task",
        "loop",
        "active",
        "lost",
        "stopped",
        "holder",
    )

    def __init__(self, session_id: str, key: int) -> None:
        self.session_id, self.key = session_id, key
        self.epoch = 0
        """Set once taken."""
        self.task = asyncio.current_task()
        self.loop = asyncio.get_running_loop()
        self.active = True
        """The holder is still inside its ``async with``."""
        self.lost = False
        self.stopped = False
        """Its task was cancelled because the lease was lost."""
        self.holder = ""
        """Who holds it instead, when it could not be taken: ``pid host``."""


class AdvisoryLeases:
    def __init__(self, target: Target) -> None:
        self._target = target
        self._take_q = sql.SQL("SELECT {s}.take_lease(%s, %s, %s)").format(
            s=sql.Identifier(target.schema)
        )
        self._local = LocalLeases()
        self._conn: psycopg.Connection | None = None
        self._mutex = threading.Lock()
        """The lease connection: one user at a time."""
        self._held: dict[str, _Holding] = {}
        self._held_mutex = threading.Lock()
        self._unreachable_since: float | None = None
        self._watchdog: threading.Thread | None = None
        self._closed = threading.Event()
        self.check_seconds = CHECK_SECONDS

    def epoch(self, session_id: str) -> int | None:
        """The epoch this store's writes to ``session_id`` carry: its lease's, None
        when it holds none; LeaseLost once the lease is lost."""
        holding = self._held.get(session_id)
        if holding is None:
            return None
        if holding.lost:
            raise lease_lost(session_id)
        return holding.epoch

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        async with self._local.hold(session_id):
            holding = _Holding(session_id, lock_key("turn", self._target.schema, session_id))
            take = asyncio.ensure_future(asyncio.to_thread(self._take, holding))
            try:
                taken = await asyncio.shield(take)
            except asyncio.CancelledError:
                take.add_done_callback(lambda _: self._give_back(holding, take))
                raise
            if not taken:
                where = (
                    who_holds(holding.holder)
                    if holding.holder
                    else "in another process (another editor window, or another host "
                    "on this database)"
                )
                raise TurnInProgress(
                    f"a turn is running in session {session_id!r} {where}; wait "
                    "for it to end or cancel it there"
                )
            try:
                yield
            except BaseException as exc:
                holding.active = False
                if not holding.stopped:
                    raise
                await _settle(holding)
                if isinstance(exc, LeaseLost):
                    raise
                cause = None if isinstance(exc, asyncio.CancelledError) else exc
                raise lease_lost(session_id) from cause
            else:
                holding.active = False
                if holding.stopped:  # the body swallowed the cancel (a turn closing itself)
                    await _settle(holding)
                    raise lease_lost(session_id)
            finally:
                with self._held_mutex:
                    self._held.pop(session_id, None)
                if not holding.lost:
                    await asyncio.to_thread(self._release, holding.key)

    def _take(self, holding: _Holding) -> bool:
        """Take the lease with a new epoch, and hold it: registered before the
        mutex is let go, so a connection replaced after is sure to take it back."""
        row = None
        with self._mutex:
            for attempt in (1, 2):
                try:
                    conn = self._connection()
                    args = (holding.key, holding.session_id, None)
                    row = conn.execute(self._take_q, args).fetchone()
                    break
                except psycopg.OperationalError as exc:
                    # The lease connection died (its locks went with it): one fresh try.
                    self._drop()
                    if attempt == 2:
                        raise unavailable(self._target, "take a turn lease in", exc) from exc
            if row is None or row[0] is None:
                holding.holder = self._holder(conn, holding.key)
                return False
            holding.epoch = row[0]
            with self._held_mutex:
                self._held[holding.session_id] = holding
                self._watch()
            return True

    @staticmethod
    def _holder(conn: psycopg.Connection, key: int) -> str:
        """The ``pid host`` a lease connection holding ``key`` names itself by (its
        application_name), or "" when the server will not say (another user's)."""
        try:
            row = conn.execute(
                "SELECT a.application_name FROM pg_locks l "
                "JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                "AND l.classid = ((%s::bigint >> 32) & 4294967295)::oid "
                "AND l.objid = (%s::bigint & 4294967295)::oid "
                "AND l.database = (SELECT oid FROM pg_database WHERE datname = "
                "current_database())",
                (key, key),
            ).fetchone()
        except psycopg.Error:
            return ""
        name = row[0] if row and row[0] else ""
        return name.removeprefix(APP_PREFIX) if name.startswith(APP_PREFIX) else ""

    def _give_back(self, holding: _Holding, take: asyncio.Future[bool]) -> None:
        """Release a lease taken for a taker that was cancelled meanwhile."""
        if take.cancelled() or take.exception() is not None or not take.result():
            return
        with self._held_mutex:
            self._held.pop(holding.session_id, None)
        holding.loop.run_in_executor(None, self._release, holding.key)

    def _release(self, key: int) -> None:
        with self._mutex:
            if self._conn is None:
                return  # the connection died: the server released the lock
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except psycopg.Error:
                self._drop()  # the watchdog takes the others back on a new one

    def _connection(self) -> psycopg.Connection:
        """The lease connection (the mutex held). A new one takes back the leases
        the last one held, or loses them."""
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self._drop()
        conn = connect(
            self._target,
            autocommit=True,
            application_name=(APP_PREFIX + holder_stamp())[:63],
            **LEASE_PARAMS,
        )
        # An idle-session timeout would end the connection, and so the leases, of a
        # holder that is only waiting on a slow tool: not on this connection.
        conn.execute(
            "SELECT set_config(name, '0', false) FROM pg_settings WHERE name IN "
            "('idle_session_timeout', 'idle_in_transaction_session_timeout')"
        )
        self._conn = conn
        self._retake(conn)
        return conn

    def _retake(self, conn: psycopg.Connection) -> None:
        with self._held_mutex:
            held = [h for h in self._held.values() if not h.lost]
        for holding in held:
            row = conn.execute(
                self._take_q, (holding.key, holding.session_id, holding.epoch)
            ).fetchone()
            if row is None or row[0] is None:
                self._lose(holding, "another process took it")
            else:
                log.info("took the turn lease of session %s back", holding.session_id)

    def _lose(self, holding: _Holding, why: str) -> None:
        holding.lost = True
        log.warning(
            "lost the turn lease of session %s (its connection to %s ended and %s); "
            "stopping what runs under it",
            holding.session_id,
            self._target.url,
            why,
        )
        with suppress(RuntimeError):  # its loop closed: nothing runs there any more
            holding.loop.call_soon_threadsafe(_stop, holding)

    def _watch(self) -> None:
        """Start the watchdog if it is not running (the held mutex held)."""
        if self._watchdog is None:
            self._watchdog = threading.Thread(
                target=self._watch_loop, name="agent-host lease watchdog", daemon=True
            )
            self._watchdog.start()

    def _watch_loop(self) -> None:
        while not self._closed.wait(self.check_seconds):
            with self._held_mutex:
                if not self._held:
                    self._watchdog = None  # started again by the next take
                    return
            self._check()

    def _check(self) -> None:
        with self._mutex:
            if self._closed.is_set():
                return
            if self._conn is not None:
                try:
                    self._conn.execute("SELECT 1")
                    return
                except psycopg.Error:
                    self._drop()
            try:
                self._connection()
            except (StoreUnavailable, psycopg.Error) as exc:
                self._drop()
                now = time.monotonic()
                self._unreachable_since = self._unreachable_since or now
                if now - self._unreachable_since < RETAKE_GRACE:
                    return
                with self._held_mutex:
                    held = [h for h in self._held.values() if not h.lost]
                for holding in held:
                    self._lose(holding, f"the server could not be reached again: {exc}")
                return
            self._unreachable_since = None

    def _drop(self) -> None:
        if self._conn is not None:
            with suppress(psycopg.Error):
                self._conn.close()
        self._conn = None

    def close(self) -> None:
        self._closed.set()
        with self._mutex:
            self._drop()


def _stop(holding: _Holding) -> None:
    """On the holder's loop: cancel what runs under a lease that was lost."""
    if holding.active and not holding.stopped and holding.task is not None:
        holding.stopped = True
        holding.task.cancel()


async def _settle(holding: _Holding) -> None:
    """Take back the cancel _stop sent, delivered or not, so that it ends here."""
    with suppress(asyncio.CancelledError):
        await asyncio.sleep(0)  # a cancel not delivered yet lands here
    if holding.task is not None:
        holding.task.uncancel()


def lease_lost(session_id: str) -> LeaseLost:
    return LeaseLost(
        f"the turn lease of session {session_id!r} was lost: its connection to the "
        "database ended and another process took the session (or it could not be "
        "taken back); nothing more was written. Resume the session and try again"
    )
