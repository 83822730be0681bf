"""Concurrent use of one AgentHostSession waits its turn, as SQLiteSession's does
(issue 24): in one process, across processes on every backend, and under the real
SDK's ``Runner.run`` against a loopback Responses API; a wait that runs out names
what holds the session. And the SDK's store arguments: ``x.db`` is an SQLite file,
no store is in memory."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, OpenAIResponsesModel, Runner, SQLiteSession  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from agent_host.agents import AgentHostSession  # noqa: E402
from agent_host.session.errors import TurnInProgress  # noqa: E402
from agent_host.session.store.file import FileCheckpointer  # noqa: E402
from agent_host.session.store.memory import MemoryCheckpointer  # noqa: E402
from agent_host.session.store.sqlite import SqliteCheckpointer  # noqa: E402

from .conftest import make_backend  # noqa: E402
from .responses_server import Responses, serve  # noqa: E402

agents.set_tracing_disabled(True)
CHILD = str(Path(__file__).with_name("agents_child.py"))
ENV = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_HOST")}


def texts(items: list) -> list[str]:
    return [
        i["content"] if isinstance(i["content"], str) else i["content"][0]["text"] for i in items
    ]


def check_callers(items: list, callers: dict[str, int]) -> None:
    """Every item each caller added once, in the order it added them."""
    got = texts(items)
    assert len(got) == len(set(got)) == sum(callers.values()), got
    for name, count in callers.items():
        mine = [t for t in got if t.split("-")[0] == name]
        assert mine == [f"{name}-{i}" for i in range(count)], (name, mine)


async def test_twenty_concurrent_add_items_in_one_process(tmp_path):
    ours = AgentHostSession("g", f"sqlite:///{tmp_path}/g.db", workdir=tmp_path)
    peer = SQLiteSession("g", str(tmp_path / "peer.db"))

    async def caller(session, n: int) -> None:
        await session.add_items([{"role": "user", "content": f"c{n}-0"}])
        await session.add_items(
            [{"role": "user", "content": f"c{n}-1"}, {"role": "user", "content": f"c{n}-2"}]
        )

    await asyncio.gather(*(caller(ours, n) for n in range(20)))
    await asyncio.gather(*(caller(peer, n) for n in range(20)))
    items = await ours.get_items()
    check_callers(items, {f"c{n}": 3 for n in range(20)})
    got = texts(items)
    for n in range(20):  # one add_items call's items stay together
        assert got.index(f"c{n}-2") == got.index(f"c{n}-1") + 1
    assert Counter(map(json.dumps, items)) == Counter(map(json.dumps, await peer.get_items()))
    await ours.close()
    peer.close()


def run_writers(store: str, kind: str, count: int = 40) -> None:
    """Two processes adding ``count`` items each to session ``p``, started together."""
    procs = [
        subprocess.Popen(
            [sys.executable, CHILD, "add", store, "p", name, str(count), kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )  # fmt: skip
        for name in ("a", "b")
    ]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            _, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


@pytest.mark.parametrize(
    "backend_name", ["file", "sqlite", "postgres", "sqla-sqlite", "sqla-mysql"]
)
def test_two_processes_add_forty_items_each(backend_name, tmp_path, request):
    store = make_backend(backend_name, tmp_path, request).url
    run_writers(store, "ours")
    peer_path = str(tmp_path / "peer.db")
    run_writers(peer_path, "sdk")

    async def read() -> tuple[list, list]:
        ours = AgentHostSession("p", store, workdir=tmp_path)
        peer = SQLiteSession("p", peer_path)
        try:
            return await ours.get_items(), await peer.get_items()
        finally:
            await ours.close()
            peer.close()

    items, peer_items = asyncio.run(read())
    check_callers(items, {"a": 40, "b": 40})
    assert Counter(map(json.dumps, items)) == Counter(map(json.dumps, peer_items))


async def test_two_concurrent_runner_runs_on_one_session_both_complete(tmp_path):
    responses = Responses(meet=2)  # each model call waits for the other: both in flight
    with serve(responses) as url:
        model = OpenAIResponsesModel("loopback", AsyncOpenAI(base_url=url, api_key="test"))
        agent = Agent(name="helper", model=model)
        session = AgentHostSession("r", f"sqlite:///{tmp_path}/r.db", workdir=tmp_path)
        first, second = await asyncio.gather(
            Runner.run(agent, "first", session=session),
            Runner.run(agent, "second", session=session),
        )
        assert (first.final_output, second.final_output) == ("echo: first", "echo: second")
        assert sorted(responses.seen) == ["first", "second"]
        got = texts(await session.get_items())
        await session.close()

        peer = SQLiteSession("r", str(tmp_path / "peer.db"))
        await asyncio.gather(
            Runner.run(agent, "first", session=peer), Runner.run(agent, "second", session=peer)
        )
        assert sorted(got) == sorted(texts(await peer.get_items()))
        peer.close()
    assert sorted(got) == ["echo: first", "echo: second", "first", "second"]
    for prompt in ("first", "second"):  # each run's question before its answer
        assert got.index(prompt) < got.index(f"echo: {prompt}")


async def test_a_wait_that_runs_out_names_the_holder(tmp_path):
    store = str(tmp_path / "w.db")
    # Another process holds the session.
    child = subprocess.Popen(
        [sys.executable, CHILD, "hold", store, "w"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    try:
        assert child.stdout.readline().strip() == "held"
        session = AgentHostSession("w", store, workdir=tmp_path, wait=0.3)
        with pytest.raises(TurnInProgress, match=rf"in another process \(pid {child.pid} "):
            await session.add_items([{"role": "user", "content": "x"}])
        await session.close()
    finally:
        child.communicate(input="", timeout=30)

    # Another AgentHost of this process holds it.
    session = AgentHostSession("w", store, workdir=tmp_path, wait=0.3)
    other = AgentHostSession("w", store, workdir=tmp_path)
    async with other.host.store.turn_lease("w"):
        with pytest.raises(TurnInProgress, match=rf"in this process \(pid {os.getpid()},"):
            await session.pop_item()
    await other.close()

    # This session's own operation holds it; wait=0 refuses at once.
    async with session.host.handle("w").exclusive(True, "a restore"):
        with pytest.raises(TurnInProgress, match=r"\(a restore\) in this process .*waited 0.3s"):
            await session.clear_session()
        eager = AgentHostSession("w", host=session.host, wait=0)
        with pytest.raises(TurnInProgress, match="in this process"):
            await eager.add_items([{"role": "user", "content": "y"}])
    await session.add_items([{"role": "user", "content": "z"}])  # free again
    assert texts(await session.get_items()) == ["z"]
    await session.close()


def test_a_postgres_refusal_names_the_holding_process(tmp_path, request):
    store = make_backend("postgres", tmp_path, request).url
    child = subprocess.Popen(
        [sys.executable, CHILD, "hold", store, "w"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip

    async def refused() -> None:
        session = AgentHostSession("w", store, workdir=tmp_path, wait=0.3)
        try:
            with pytest.raises(TurnInProgress, match=rf"in another process \(pid {child.pid} "):
                await session.add_items([{"role": "user", "content": "x"}])
        finally:
            await session.close()

    try:
        assert child.stdout.readline().strip() == "held"
        asyncio.run(refused())
    finally:
        child.communicate(input="", timeout=30)


@pytest.mark.parametrize("name", ["conversations.db", "c.sqlite", "c.SQLITE3"])
async def test_a_db_path_is_an_sqlite_file_as_the_sdk_takes_it(tmp_path, name):
    path = tmp_path / name
    session = AgentHostSession("u", str(path), workdir=tmp_path)
    assert isinstance(session.host.store, SqliteCheckpointer)
    await session.add_items([{"role": "user", "content": "hi"}])
    await session.close()
    assert path.is_file() and path.read_bytes().startswith(b"SQLite format 3\0")


async def test_a_db_named_directory_stays_a_file_store(tmp_path):
    (tmp_path / "old.db").mkdir()
    session = AgentHostSession("u", str(tmp_path / "old.db"), workdir=tmp_path)
    assert isinstance(session.host.store, FileCheckpointer)
    await session.close()


async def test_no_store_is_in_memory_as_the_sdks_default(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    session = AgentHostSession("u", workdir=tmp_path)
    assert isinstance(session.host.store, MemoryCheckpointer)
    await session.add_items([{"role": "user", "content": "hi"}])
    assert await session.get_items() == [{"role": "user", "content": "hi"}]
    await session.close()
    assert not (tmp_path / "data").exists() and not (tmp_path / "home").exists()
    again = AgentHostSession("u", workdir=tmp_path)
    assert await again.get_items() == []  # gone with the session, as SQLiteSession(id)'s
    await again.close()
