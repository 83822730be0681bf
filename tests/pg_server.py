"""A throwaway PostgreSQL database for one test run, and a fresh schema per test.

The server is ``AGENT_HOST_TEST_PG`` (a libpq URL; default the local one CI starts,
postgresql://postgres@127.0.0.1:5432/postgres). The run creates
``agent_host_test_<pid>_<random>`` there and drops it at the end; each store under
test gets a schema of its own in it, so tests never see each other's sessions.
A server that cannot be reached skips the postgres tests -- and fails them on CI.
"""

from __future__ import annotations

import itertools
import os
import secrets
from urllib.parse import urlsplit

from agent_host.session.store.conformance import Backend, by_url, server_unavailable

ADMIN_URL = os.environ.get("AGENT_HOST_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
_schemas = itertools.count(1)


class Throwaway:
    """The run's database: created on first use, dropped by :meth:`drop`."""

    def __init__(self) -> None:
        self.url: str | None = None
        self.error: str | None = None

    def create(self) -> str:
        if self.url is not None:
            return self.url
        if self.error is not None:
            server_unavailable(self.error)
        try:
            import psycopg
        except ImportError:
            self.error = "psycopg is not installed: pip install 'agent-host[postgres]'"
            server_unavailable(self.error)
        name = f"agent_host_test_{os.getpid()}_{secrets.token_hex(3)}"
        try:
            with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error as exc:
            self.error = f"no PostgreSQL at {ADMIN_URL}: {str(exc).strip().splitlines()[0]}"
            server_unavailable(self.error)
        self.url = urlsplit(ADMIN_URL)._replace(path=f"/{name}").geturl()
        return self.url

    def drop(self) -> None:
        if self.url is None:
            return
        import psycopg

        name = urlsplit(self.url).path.lstrip("/")
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.url = None


def postgres_backend(database_url: str) -> Backend:
    """A store in a new schema of the run's database."""
    schema = f"t{next(_schemas)}_{secrets.token_hex(2)}"
    return by_url("postgres", f"{database_url}?schema={schema}")


def sqlalchemy_backend(database_url: str) -> Backend:
    """The SQLAlchemy store (asyncpg) in a new schema of the run's database."""
    schema = f"a{next(_schemas)}_{secrets.token_hex(2)}"
    url = database_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    return by_url("sqla-postgres", f"{url}?schema={schema}")
