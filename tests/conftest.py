"""Fixtures shared by every test: the store backends the conformance suite runs on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agent_host.session import Checkpointer
from agent_host.session.store.conformance import FACTORIES, Backend

from .pg_server import Throwaway, postgres_backend

BACKENDS = ["file", "sqlite", "memory", "postgres"]


@pytest.fixture(scope="session")
def pg_database() -> Iterator[Throwaway]:
    """The run's throwaway PostgreSQL database (created when a test first needs it)."""
    database = Throwaway()
    yield database
    database.drop()


def make_backend(name: str, tmp_path, request: pytest.FixtureRequest | None = None) -> Backend:
    if name == "postgres":
        if request is None:
            raise ValueError("the postgres backend needs the test's request (pg_database)")
        return postgres_backend(request.getfixturevalue("pg_database").create())
    if name not in FACTORIES:
        raise ValueError(name)
    return FACTORIES[name](tmp_path)


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path) -> Backend:
    return make_backend(request.param, tmp_path, request)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Checkpointer]:
    s = backend.open()
    yield s
    await s.close()
    await backend.close_all()


@pytest.fixture(autouse=True)
def _forget_secrets():
    """Each test starts with no secrets registered: one test's fake key must not
    mask another test's expected output (the registry is process-wide)."""
    from agent_host.session.redaction import SECRETS

    SECRETS.clear()
    yield
    SECRETS.clear()
