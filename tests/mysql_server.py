"""Throwaway MySQL/MariaDB databases for one test run: one per store under test.

The server is ``AGENT_HOST_TEST_MYSQL`` (a URL; default the local MariaDB CI starts,
mysql://root@127.0.0.1:3306/test). MySQL has no schemas inside a database, so each
store gets a database of its own, ``agent_host_t<pid>_<n>_<random>``, all dropped at
the end of the run. A server that cannot be reached skips the MySQL tests -- and
fails them on CI.
"""

from __future__ import annotations

import itertools
import os
import secrets
from urllib.parse import unquote, urlsplit

from agent_host.session.store.conformance import Backend, by_url, server_unavailable

ADMIN_URL = os.environ.get("AGENT_HOST_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")
_numbers = itertools.count(1)


class Throwaways:
    """The run's databases: made by :meth:`create`, dropped by :meth:`drop`."""

    def __init__(self) -> None:
        self.made: list[str] = []
        self.error: str | None = None
        parts = urlsplit(ADMIN_URL)
        self._connect = {
            "host": parts.hostname or "127.0.0.1",
            "port": parts.port or 3306,
            "user": unquote(parts.username or "root"),
            "password": unquote(parts.password or ""),
        }

    def _admin(self):  # a pymysql connection (aiomysql's own driver underneath)
        import pymysql

        return pymysql.connect(**self._connect, connect_timeout=5, autocommit=True)

    def create(self, scheme: str = "mysql+aiomysql") -> str:
        """A new, empty database's URL for the SQLAlchemy store."""
        if self.error is not None:
            server_unavailable(self.error)
        try:
            import pymysql
        except ImportError:
            self.error = "aiomysql is not installed: pip install 'agent-host[sqlalchemy]'"
            server_unavailable(self.error)
        name = f"agent_host_t{os.getpid()}_{next(_numbers)}_{secrets.token_hex(2)}"
        try:
            with self._admin() as conn, conn.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        except pymysql.Error as exc:
            self.error = f"no MySQL/MariaDB at {ADMIN_URL}: {exc}"
            server_unavailable(self.error)
        self.made.append(name)
        c = self._connect
        password = f":{c['password']}" if c["password"] else ""
        return f"{scheme}://{c['user']}{password}@{c['host']}:{c['port']}/{name}"

    def drop(self) -> None:
        if not self.made:
            return
        with self._admin() as conn, conn.cursor() as cursor:
            for name in self.made:
                cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        self.made.clear()


def mysql_backend(databases: Throwaways) -> Backend:
    """The SQLAlchemy store (aiomysql) in a new database of the run's server."""
    return by_url("sqla-mysql", databases.create())
