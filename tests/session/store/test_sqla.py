"""The SQLAlchemy store's own edges: which URLs open it, what it says when the
database cannot be reached, and that agent-host starts without importing it."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("aiosqlite")

from agent_host.session import UnsupportedStore, open_store  # noqa: E402
from agent_host.session.errors import StoreUnavailable  # noqa: E402
from agent_host.session.events import UserPrompt  # noqa: E402
from agent_host.session.store.sqla import SqlAlchemyCheckpointer  # noqa: E402


async def test_urls_and_an_engine_open_it(tmp_path):
    from sqlalchemy.ext.asyncio import create_async_engine

    store = open_store(f"sqlite+aiosqlite:///{tmp_path}/a.db")
    assert isinstance(store, SqlAlchemyCheckpointer)
    assert store.url == f"sqlite+aiosqlite:///{tmp_path}/a.db"
    await store.append("s", [UserPrompt(text="hi")])
    await store.close()
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/a.db")
    try:
        again = open_store(engine)  # type: ignore[arg-type]
        assert [e.text for e in await again.read("s")] == ["hi"]
        await again.close()
        assert await open_store(engine).head("s") == 1  # type: ignore[arg-type]
    finally:
        await engine.dispose()


@pytest.mark.parametrize("url", ["mysql+aiomysql://u@h/db", "sqlite+pysqlite:///x.db"])
def test_what_it_does_not_run_on_is_refused(url):
    with pytest.raises(UnsupportedStore, match="sqlite\\+aiosqlite"):
        open_store(url)


async def test_an_unreachable_server_is_store_unavailable_without_its_password():
    store = open_store("postgresql+asyncpg://app:sekrit@127.0.0.1:1/nope")
    with pytest.raises(StoreUnavailable) as caught:
        await store.head("s")
    assert "sekrit" not in str(caught.value) and "app:***@127.0.0.1:1" in str(caught.value)
    assert "sekrit" not in store.url
    await store.close()


def test_start_up_does_not_import_sqlalchemy():
    code = (
        "import sys, agent_host.cli, agent_host.session, agent_host.agents;"
        "print('sqlalchemy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


async def test_a_relative_path_is_named_absolute_for_other_processes(tmp_path, monkeypatch):
    # As in SQLAlchemy: three slashes start a relative path, four an absolute one.
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite+aiosqlite:///rel.db")
    await store.append("s", [UserPrompt(text="hi")])
    assert store.url == f"sqlite+aiosqlite:///{tmp_path}/rel.db"
    assert (tmp_path / "rel.db").exists()
    await store.close()
