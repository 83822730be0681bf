"""Fixtures shared by every test: the store backends the conformance suite runs on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agent_host.session import Checkpointer
from agent_host.session.store.conformance import FACTORIES, Backend

from .lanes import mark_lanes, run_lock
from .mysql_server import Throwaways, mysql_backend
from .pg_server import Throwaway, postgres_backend, sqlalchemy_backend

BACKENDS = ["file", "sqlite", "memory", "postgres"]


@pytest.fixture(scope="session")
def pg_database() -> Iterator[Throwaway]:
    """The run's throwaway PostgreSQL database (created when a test first needs it)."""
    database = Throwaway()
    yield database
    database.drop()


@pytest.fixture(scope="session")
def mysql_databases() -> Iterator[Throwaways]:
    """The run's throwaway MySQL/MariaDB databases (made as tests need them)."""
    databases = Throwaways()
    yield databases
    databases.drop()


def make_backend(name: str, tmp_path, request: pytest.FixtureRequest | None = None) -> Backend:
    if name == "postgres":
        if request is None:
            raise ValueError("the postgres backend needs the test's request (pg_database)")
        return postgres_backend(request.getfixturevalue("pg_database").create())
    if name == "sqla-postgres":
        if request is None:
            raise ValueError("the sqla-postgres backend needs the test's request (pg_database)")
        return sqlalchemy_backend(request.getfixturevalue("pg_database").create())
    if name == "sqla-mysql":
        if request is None:
            raise ValueError("the sqla-mysql backend needs the test's request (mysql_databases)")
        return mysql_backend(request.getfixturevalue("mysql_databases"))
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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_lanes(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Under xdist, a test marked ``exclusive`` runs with no other test running."""
    lock = getattr(item.config, "_agent_host_run_lock", None)
    if lock is None:
        return (yield)
    with lock.exclusive() if item.get_closest_marker("exclusive") else lock.shared():
        return (yield)


def pytest_configure(config: pytest.Config) -> None:
    config._agent_host_run_lock = run_lock(config)  # type: ignore[attr-defined]


@pytest.fixture(scope="session", autouse=True)
def _own_user_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The default store (the user data folder) is this run's -- this worker's --
    own: never the developer's sessions, nor another worker's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("user-data")))
        yield
