"""The SQLAlchemy store's own edges: which URLs open it, what it says when the
database cannot be reached, and that agent-host starts without importing it."""

from __future__ import annotations

import asyncio
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


@pytest.mark.parametrize("url", ["mssql+aioodbc://u@h/db", "sqlite+pysqlite:///x.db"])
def test_what_it_does_not_run_on_is_refused(url):
    with pytest.raises(UnsupportedStore, match="sqlite\\+aiosqlite"):
        open_store(url)


async def test_mysql_and_mariadb_urls_open_one_database(mysql_databases):
    url = mysql_databases.create()  # mysql+aiomysql://
    mysql = open_store(url)
    mariadb = open_store(url.replace("mysql+aiomysql://", "mariadb+aiomysql://", 1))
    assert isinstance(mariadb, SqlAlchemyCheckpointer)
    try:
        # Ids differing only in case or a trailing space are different sessions (the
        # server's collations fold both), and a LONGBLOB holds what a BLOB cannot.
        big = "x" * 100_000
        for n, session_id in enumerate(["Ab", "ab", "ab ", "ab\u00e9"]):
            await mysql.append(session_id, [UserPrompt(text=f"{n} {big}")])
        assert [
            e.text[:1] for sid in ["Ab", "ab", "ab ", "ab\u00e9"] for e in await mariadb.read(sid)
        ] == [
            "0",
            "1",
            "2",
            "3",
        ]
        assert sorted(i.id for i in await mariadb.list()) == ["Ab", "ab", "ab ", "ab\u00e9"]
        blob = await mariadb.blobs.put(big.encode() * 3)
        assert await mysql.blobs.get(blob) == big.encode() * 3
    finally:
        await mysql.close()
        await mariadb.close()


@pytest.mark.parametrize("given", ["url", "engine"])
async def test_writers_making_one_session_at_once_all_land_on_mysql(given, mysql_databases):
    # Under InnoDB's REPEATABLE READ (the server's default, and an app engine's) the
    # row locks of a new session deadlock some of these; the store reads committed.
    from sqlalchemy.ext.asyncio import create_async_engine

    url = mysql_databases.create()
    engine = create_async_engine(url) if given == "engine" else None
    store = open_store(engine if engine is not None else url)  # type: ignore[arg-type]
    try:
        for n in range(4):
            await asyncio.gather(
                *(store.append(f"new{n}", [UserPrompt(text=str(i))]) for i in range(8))
            )
            assert sorted(e.text for e in await store.read(f"new{n}")) == list("01234567")
    finally:
        await store.close()
        if engine is not None:
            await engine.dispose()


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
