"""AgentHostSession in the SQLAlchemy store, as the SDK's SQLAlchemySession is made:
``from_url(id, url=..., create_tables=True)`` and ``(id, engine=...)``, on aiosqlite,
asyncpg and aiomysql (MariaDB); the same runs give the same items as the SDK's own
sessions."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import pytest

pytest.importorskip("agents")
pytest.importorskip("sqlalchemy")
pytest.importorskip("aiosqlite")

from agents import SQLiteSession  # noqa: E402
from agents.extensions.memory import SQLAlchemySession  # noqa: E402
from sqlalchemy import inspect  # noqa: E402
from sqlalchemy.ext.asyncio import create_async_engine  # noqa: E402

from agent_host.agents import AgentHostSession  # noqa: E402
from agent_host.session.errors import StoreUnavailable  # noqa: E402
from agent_host.session.host import AgentHost  # noqa: E402
from agent_host.session.store.sqla import SqlAlchemyCheckpointer  # noqa: E402

from .test_agents import ScriptedModel, as_json, run_all, script  # noqa: E402


def pg_url(request) -> str:
    base = request.getfixturevalue("pg_database").create()
    schema = f"sdk_{secrets.token_hex(3)}"
    return base.replace("postgresql://", "postgresql+asyncpg://", 1) + f"?schema={schema}"


def url_of(where: str, tmp_path, request, name: str) -> str:
    if where == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/{name}"
    if where == "mysql":
        return request.getfixturevalue("mysql_databases").create()
    return pg_url(request)


async def check_as_sqlite_session(ours: AgentHostSession, tmp_path) -> None:
    """Runs, pops and a clear give what SQLiteSession gives for the same calls."""
    peer = SQLiteSession("sdk-1", str(tmp_path / "peer.db"))
    try:
        our_model, peer_model = ScriptedModel(script()), ScriptedModel(script())
        assert await run_all(ours, our_model) == await run_all(peer, peer_model)
        assert our_model.inputs == peer_model.inputs
        for limit in (None, 1, 3, 100):
            assert as_json(await ours.get_items(limit)) == as_json(await peer.get_items(limit))
        for _ in range(3):
            assert as_json(await ours.pop_item()) == as_json(await peer.pop_item())
        assert as_json(await ours.get_items()) == as_json(await peer.get_items())
        await ours.clear_session()
        await peer.clear_session()
        assert await ours.get_items() == [] and await ours.pop_item() is None
        await ours.add_items([{"role": "user", "content": "again"}])
        assert await ours.get_items() == [{"role": "user", "content": "again"}]
    finally:
        peer.close()


@pytest.mark.parametrize("where", ["sqlite", "postgres", "mysql"])
async def test_from_url_is_the_sdk_session(where, tmp_path, request):
    url = url_of(where, tmp_path, request, "s.db")
    ours = AgentHostSession.from_url("sdk-1", url=url, create_tables=True, workdir=tmp_path)
    assert isinstance(ours.host.store, SqlAlchemyCheckpointer)
    await check_as_sqlite_session(ours, tmp_path)
    await ours.close()
    assert ours.host.store.engine.pool.checkedout() == 0
    # Stored durably: a new session on the same URL (another engine) sees it.
    again = AgentHostSession.from_url("sdk-1", url=url, workdir=tmp_path)
    assert await again.get_items() == [{"role": "user", "content": "again"}]
    await again.close()


@pytest.mark.parametrize("where", ["sqlite", "postgres", "mysql"])
async def test_engine_is_the_apps_own_and_stays_open(where, tmp_path, request):
    url = url_of(where, tmp_path, request, "app.db")
    schema = url.partition("?schema=")[2] or None
    engine = create_async_engine(url.partition("?")[0])
    try:
        if schema:
            async with engine.begin() as conn:
                await conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
            engine = engine.execution_options(schema_translate_map={None: schema})
        # The SDK's own SQLAlchemySession in the same database, beside ours. On MySQL
        # it cannot make its tables (VARCHAR without a length): SQLiteSession stands in.
        if where == "mysql":
            theirs: SQLAlchemySession | SQLiteSession = SQLiteSession("sdk-1", ":memory:")
            their_tables = set()
        else:
            theirs = SQLAlchemySession("sdk-1", engine=engine, create_tables=True)
            their_tables = {"agent_sessions"}
        ours = AgentHostSession("sdk-1", engine=engine, workdir=tmp_path)
        items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        await theirs.add_items(items)
        await ours.add_items(items)
        assert await ours.get_items() == await theirs.get_items() == items
        assert await ours.pop_item() == await theirs.pop_item() == items[1]
        await ours.close()
        async with engine.connect() as conn:  # still open: the app's engine
            tables = await conn.run_sync(lambda c: inspect(c).get_table_names(schema=schema))
        assert {"agent_host_sessions", "agent_host_events", *their_tables} <= set(tables)
        assert await theirs.get_items() == items[:1]
        # AgentHost(store=engine) is the same store.
        async with AgentHost(store=engine, workdir=tmp_path) as host:
            assert await host.get_items(session_id="sdk-1") == items[:1]
        # Opened again on the same engine: the tables are found, not made twice.
        again = AgentHostSession("sdk-1", engine=engine, create_tables=False, workdir=tmp_path)
        assert await again.get_items() == items[:1]
    finally:
        await engine.dispose()


async def test_engine_without_tables_says_create_tables(tmp_path):
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/empty.db")
    try:
        ours = AgentHostSession("a", engine=engine, create_tables=False, workdir=tmp_path)
        with pytest.raises(StoreUnavailable, match="create_tables=True"):
            await ours.get_items()
        with pytest.raises(ValueError, match="either engine"):
            AgentHostSession("a", "memory:", engine=engine)
        with pytest.raises(TypeError, match="AsyncEngine"):
            AgentHostSession("a", engine="sqlite:///x.db")
    finally:
        await engine.dispose()


async def test_engine_session_matches_sqlite_session(tmp_path):
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/app.db")
    try:
        await check_as_sqlite_session(
            AgentHostSession("sdk-1", engine=engine, workdir=tmp_path), tmp_path
        )
    finally:
        await engine.dispose()


async def test_cli_runs_on_a_sqlalchemy_store_url(tmp_path):
    store = f"sqlite+aiosqlite:///{tmp_path}/cli.db"
    ours = AgentHostSession.from_url("relay", url=store, workdir=tmp_path)
    await ours.add_items(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    )
    await ours.close()
    steps = tmp_path / "script.json"
    steps.write_text(json.dumps({"steps": [{"text": "Continued by agent-host."}] * 10}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_HOST")}
    done = subprocess.run(
        [sys.executable, "-m", "agent_host", "run", "--store", store, "--session", "relay",
         "--model", f"scripted:{steps}", "--workspace", str(tmp_path), "What now?"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Continued by agent-host." in done.stdout
    again = AgentHostSession.from_url("relay", url=store, workdir=tmp_path)
    assert (await again.get_items())[-2:] == [
        {"role": "user", "content": "What now?"},
        {"role": "assistant", "content": "Continued by agent-host."},
    ]
    await again.close()
