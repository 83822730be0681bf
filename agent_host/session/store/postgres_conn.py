"""Reaching PostgreSQL: the store URL, the connection pool, and what a failure
tells the user to do.

The URL is libpq's (``postgresql://user@host:port/db?sslmode=...``); what it leaves
out comes from libpq's environment (PGHOST, PGUSER, PGPASSWORD, ~/.pgpass...).
agent-host adds one parameter of its own, ``schema`` (default ``agent_host``): the
schema its tables live in, so several stores can share one database.

Every failure reaches the caller as :class:`StoreUnavailable` saying what to fix:
the server is down, refused the user, has no such database, or the connection was
lost (then what the operation had done was rolled back, unless it had committed:
see PostgresCheckpointer._append). Passwords never reach a message.
"""

from __future__ import annotations

import os
import re
import select
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import psycopg
import psycopg_pool

from ..errors import StoreUnavailable, UnsupportedStore

DEFAULT_SCHEMA = "agent_host"
CONNECT_TIMEOUT = 10
"""Seconds to wait for the server to answer a new connection."""
POOL_TIMEOUT = 15.0
"""Seconds an operation waits for a pooled connection before it fails."""
POOL_SIZE = 4
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class Target:
    """Where a store lives: the libpq conninfo, the schema, and how to name it."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres"):
            raise UnsupportedStore(f"not a PostgreSQL URL: {url!r}")
        query = parse_qsl(parts.query, keep_blank_values=True)
        self.schema = DEFAULT_SCHEMA
        kept = []
        for key, value in query:
            if key == "schema":
                self.schema = value
            else:
                kept.append((key, value))
        if not _SCHEMA.fullmatch(self.schema):
            raise UnsupportedStore(
                f"schema {self.schema!r} in the store URL: use 1-63 lowercase letters, "
                "digits or '_', starting with a letter or '_'"
            )
        if not any(key == "application_name" for key, _ in kept):
            # What pg_stat_activity shows: which process holds a connection.
            kept.append(("application_name", f"agent-host {os.getpid()}"))
        self.conninfo = parts._replace(query=urlencode(kept, quote_via=quote)).geturl()
        """What libpq gets: the URL without agent-host's own parameters."""
        shown = [(k, v) for k, v in query if k != "application_name"]
        parts = parts._replace(query=urlencode(shown, quote_via=quote))
        netloc = parts.netloc
        if parts.password is not None:
            netloc = netloc.replace(f":{parts.password}@", "@", 1)
        self.url = parts._replace(netloc=netloc).geturl()
        """The URL without its password: what ``store.url`` says and messages show."""

    def where(self) -> str:
        return self.url


def connect(target: Target, autocommit: bool = False, **params: Any) -> psycopg.Connection:
    """A new connection of the store's own (not pooled): the lease and listener ones.
    ``params`` are libpq's, over the URL's (the lease's keepalives)."""
    try:
        conn = psycopg.connect(
            target.conninfo, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT, **params
        )
    except psycopg.Error as exc:
        raise unavailable(target, "connect to", exc) from exc
    _configure(conn)
    return conn


def _configure(conn: psycopg.Connection) -> None:
    # Durable on commit whatever the server's default: an acknowledged append is on disk.
    autocommit = conn.autocommit
    conn.autocommit = True
    conn.execute("SET synchronous_commit = on")
    conn.autocommit = autocommit


class Pool:
    """The pooled connections the store's operations take turns on."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._pool: psycopg_pool.ConnectionPool | None = None
        self._mutex = threading.Lock()

    def _open(self) -> psycopg_pool.ConnectionPool:
        with self._mutex:
            if self._pool is None:
                self._pool = psycopg_pool.ConnectionPool(
                    self.target.conninfo,
                    min_size=1,
                    max_size=POOL_SIZE,
                    kwargs={"connect_timeout": CONNECT_TIMEOUT},
                    configure=_configure,
                    # A connection the server dropped (a restart, pg_terminate_backend)
                    # is replaced before an operation starts on it.
                    check=_check_alive,
                    timeout=POOL_TIMEOUT,
                    open=False,
                    name="agent-host",
                )
                self._pool.open(wait=False)
            return self._pool

    @contextmanager
    def connection(self, action: str) -> Iterator[psycopg.Connection]:
        """A pooled connection inside a transaction, committed when the block ends
        (rolled back if it raises); psycopg's errors as StoreUnavailable."""
        pool = self._open()
        try:
            with pool.connection() as conn:
                yield conn
        except psycopg_pool.PoolTimeout as exc:
            # The pool says only that it waited: a fresh connection says why.
            try:
                connect(self.target).close()
            except StoreUnavailable as why:
                raise why from exc
            raise StoreUnavailable(
                f"cannot {action} {self.target.url}: every connection stayed busy for "
                f"{POOL_TIMEOUT:.0f}s; the server is overloaded or a query hangs"
            ) from exc
        except psycopg.Error as exc:
            raise unavailable(self.target, action, exc) from exc

    def close(self) -> None:
        with self._mutex:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


def _check_alive(conn: psycopg.Connection) -> None:
    """Raise if the server closed ``conn``, without a round trip (the pool's own
    check sends a query each time, a third of a small append's cost): an idle
    connection has nothing to read unless the server said goodbye (or, rarely, sent
    a notice: then a new connection is made for nothing)."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable:
        conn.close()  # so that the pool throws it away instead of offering it again
        raise psycopg.OperationalError("the server sent something to an idle connection")


def unavailable(target: Target, action: str, exc: psycopg.Error) -> StoreUnavailable:
    """What went wrong, and what to do, for a psycopg error met doing ``action``."""
    text = str(exc).strip()
    low = text.lower()
    fix = ""
    lost = False
    sqlstate = getattr(exc, "sqlstate", None)
    missing = re.search(r'database "([^"]+)" does not exist', text)
    if missing:
        fix = f"the database does not exist; create it (createdb {missing.group(1)}) or fix the URL"
    elif sqlstate == "28P01" or "password authentication failed" in low or "no password" in low:
        fix = (
            "the server refused the user's password; set it in PGPASSWORD or ~/.pgpass "
            "(never in a shared URL)"
        )
    elif sqlstate == "28000" or "pg_hba.conf" in low or "role" in low and "does not exist" in low:
        fix = "the server refused this user; create the role or allow it in pg_hba.conf"
    elif "resolve host" in low or "could not translate host name" in low:
        fix = "the host name does not resolve; fix the URL's host (or PGHOST)"
    elif "connection refused" in low or "could not connect" in low or "timeout expired" in low:
        fix = (
            "the server is not running or not reachable there; start it (e.g. "
            "pg_ctlcluster <version> main start) or fix the URL's host and port"
        )
    elif action == "connect to":
        fix = "check that the server is running and that the URL's host and port are right"
    elif isinstance(exc, psycopg.OperationalError) or sqlstate in ("57P01", "57P02", "57P03"):
        fix = (
            "the connection to the server was lost; nothing of this operation was "
            "committed, try again once the server is back"
        )
        lost = True
    reason = text.splitlines()[0] if text else type(exc).__name__
    message = f"cannot {action} {target.url}: {reason}"
    error = StoreUnavailable(f"{message}: {fix}" if fix else message)
    error.connection_lost = lost  # type: ignore[attr-defined]
    return error
