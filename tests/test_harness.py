"""LiteLLM's harness session API on agent-host (agent_host.harness), offline: the
scripted model and a gated provider stand in for a network model."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from agent_host import (
    State,
    StateIncompatible,
    aagent,
    aagent_resume,
    aagent_session,
    agent,
    agent_resume,
    agent_session,
)
from agent_host.harness.state import without_secrets
from agent_host.rpc.errors import ErrorCode
from agent_host.server.protocol import error_code
from agent_host.session import FileCheckpointer, open_store
from agent_host.session.errors import CapabilityUnsupported, HostClosed, TurnInProgress
from agent_host.session.model import Finish, ModelRequest, TextDelta, UsageReport

PRICED = "test/priced"
PRICES = {PRICED: (1.0, 2.0)}
TURN_COST = (1000 * 1.0 + 500 * 2.0) / 1e6  # what GatedProvider reports, at PRICES


@attrs.define(eq=False)
class GatedProvider:
    """Answers "done" once ``release`` is set (at once if ``open``); ``started`` is
    set when a turn reaches the model. Threading events: tests wait from any thread."""

    open: bool = True
    model: str = PRICED
    started: threading.Event = attrs.field(factory=threading.Event)
    release: threading.Event = attrs.field(factory=threading.Event)

    def __attrs_post_init__(self) -> None:
        if self.open:
            self.release.set()

    def stream(self, request: ModelRequest) -> AsyncIterator[object]:
        return self._answer()

    async def _answer(self) -> AsyncIterator[object]:
        self.started.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        yield TextDelta("done")
        yield UsageReport(1000, 500)
        yield Finish("end_turn")

    async def close(self) -> None:
        return None


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def opts(tmp_path: Path, ws: Path) -> dict:
    """A priced, offline session in a file store under tmp_path."""
    return {"provider": GatedProvider(), "store": str(tmp_path / "store"), "workdir": ws,
            "prices": PRICES}  # fmt: skip


def scripted(tmp_path: Path, *texts: str) -> str:
    path = tmp_path / "script.json"
    steps = [{"text": t, "usage": {"input_tokens": 1000, "output_tokens": 500}} for t in texts]
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


def stored_ids(url: str) -> list[str]:
    async def ids() -> list[str]:
        store = open_store(url)
        try:
            return [info.id for info in await store.list()]
        finally:
            await store.close()

    return asyncio.run(ids())


def prompts(history: list[dict]) -> list[str]:
    return [m["content"] for m in history if m["role"] == "user"]


# -- one turn


def test_agent_runs_one_turn_in_a_stored_session(tmp_path, ws):
    url = f"sqlite://{tmp_path / 'x.db'}"
    result = agent("hello", model=scripted(tmp_path, "hi there"), store=url, workdir=ws)
    assert (result.stop_reason, result.text) == ("end_turn", "hi there")
    assert stored_ids(url) == [result.session_id]


async def test_aagent_runs_one_turn_in_a_stored_session(tmp_path, ws):
    url = (tmp_path / "store").as_uri()
    result = await aagent("hello", model=scripted(tmp_path, "hi there"), store=url, workdir=ws)
    assert (result.stop_reason, result.text) == ("end_turn", "hi there")
    assert await asyncio.to_thread(stored_ids, url) == [result.session_id]


# -- several turns


def test_a_with_block_runs_turns_totals_their_cost_and_closes(opts):
    with agent_session(**opts) as s:
        first = s.run("install dev deps")
        assert s.cost == pytest.approx(TURN_COST)
        second = s.run("fix the first failure")
        assert first.session_id == second.session_id == s.session_id
        assert s.cost == pytest.approx(first.cost + second.cost) == pytest.approx(2 * TURN_COST)
        assert prompts(s.history()) == ["install dev deps", "fix the first failure"]
    with pytest.raises(HostClosed, match="closed"):
        s.run("more")
    with pytest.raises(HostClosed):
        s.detach()
    s.close()  # closing again does nothing


def test_a_cost_nobody_knows_is_none_not_zero(opts):
    opts = {**opts, "prices": None}  # GatedProvider's model is in no price table
    with agent_session(**opts) as s:
        result = s.run("hello")
        assert result.cost is None and s.cost is None
        s.run("again")
        assert s.cost is None


def test_a_session_id_continues_that_session_with_its_cost(opts):
    with agent_session(**opts) as s:
        s.run("one")
    with agent_session(**opts, session_id=s.session_id) as again:
        assert again.cost == pytest.approx(TURN_COST)  # loaded before any turn
        again.run("two")
        assert again.cost == pytest.approx(2 * TURN_COST)
        assert prompts(again.history()) == ["one", "two"]


async def test_async_with_and_await_open_async_sessions(opts):
    async with aagent_session(**opts) as s:
        result = await s.arun("one")
        assert result.stop_reason == "end_turn"
        assert prompts(await s.ahistory()) == ["one"]
    with pytest.raises(HostClosed):
        await s.arun("two")
    s2 = await aagent_session(**opts, session_id=s.session_id)
    async with s2:
        await s2.arun("two")
        assert s2.cost == pytest.approx(2 * TURN_COST)
    with pytest.raises(HostClosed):
        await s2.arun("three")


async def test_blocking_calls_inside_a_running_loop_say_to_await(opts):
    with pytest.raises(RuntimeError, match="aagent_session"):
        agent_session(**opts)
    async with aagent_session(**opts) as s:
        with pytest.raises(RuntimeError, match=r"await session\.arun"):
            s.run("one")
        with pytest.raises(RuntimeError, match=r"await session\.astop"):
            s.stop()
        assert prompts(await s.ahistory()) == []  # nothing ran, nothing was released


def test_a_sync_session_serves_other_threads_and_event_loops(opts):
    with agent_session(**opts) as s:
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(s.run, "from a thread").result(timeout=30).stop_reason == "end_turn"

        async def from_a_loop() -> str:
            return (await s.arun("from a loop")).stop_reason

        assert asyncio.run(from_a_loop()) == "end_turn"
        assert prompts(s.history()) == ["from a thread", "from a loop"]


# -- parking and resuming


@pytest.mark.parametrize("park", ["detach", "stop"])
def test_a_parked_session_resumes_from_its_state(opts, tmp_path, ws, park):
    with agent_session(**opts, approval="auto-edit") as s:
        s.run("one")
        state = getattr(s, park)()
        with pytest.raises(HostClosed, match="agent_resume"):
            s.run("two")
    assert state == State(
        session_id=s.session_id,
        store=(tmp_path / "store").as_uri(),
        workdir=str(ws),
        model=PRICED,
        approval="auto-edit",
    )
    assert State.loads(state.dumps()) == state
    assert State.loads(state.dumps().decode()) == state
    with agent_resume(State.loads(state.dumps()), provider=GatedProvider(), prices=PRICES) as r:
        assert r.session_id == s.session_id
        assert r.cost == pytest.approx(TURN_COST)
        r.run("two")
        assert r.cost == pytest.approx(2 * TURN_COST)
        assert prompts(r.history()) == ["one", "two"]


async def test_aagent_resume_with_an_override(opts):
    async with aagent_session(**opts) as s:
        await s.arun("one")
        state = await s.adetach()
    again = {"provider": GatedProvider(), "prices": PRICES, "approval": "read-only"}
    async with aagent_resume(state, **again) as r:
        await r.arun("two")
        assert prompts(await r.ahistory()) == ["one", "two"]
        assert (await r.astop()).approval == "read-only"


def test_agent_resume_keeps_the_states_session(opts):
    with agent_session(**opts) as s:
        state = s.detach()
    with pytest.raises(TypeError, match="session_id"):
        agent_resume(state, session_id="other")


def test_across_two_processes_and_no_credential_in_the_state(tmp_path, ws):
    model = scripted(tmp_path, "first answer", "second answer")
    store = f"sqlite://{tmp_path / 'sessions.db'}"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-SECRET123"}
    child = [sys.executable, str(Path(__file__).with_name("harness_child.py"))]
    first = subprocess.run(
        [*child, "start", model, store, str(ws)], env=env, capture_output=True, timeout=120
    )
    assert first.returncode == 0, first.stderr.decode()
    raw = first.stdout
    for secret in (b"sk-test-SECRET123", b"SECRET123", b"hunter2"):
        assert secret not in raw
    assert State.loads(raw).store == store

    second = subprocess.run(
        [*child, "resume", model, store, str(ws)],
        input=raw,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr.decode()
    out = json.loads(second.stdout)
    assert out["session_id"] == State.loads(raw).session_id
    assert out["text"] == "second answer"
    assert prompts(out["history"]) == ["first prompt", "second prompt"]
    assert out["cost"] == pytest.approx(2 * TURN_COST)


# -- while a turn runs


def test_detach_refuses_while_a_turn_runs_and_cancels_nothing(opts):
    provider = opts["provider"] = GatedProvider(open=False)
    with agent_session(**opts) as s, ThreadPoolExecutor(1) as pool:
        running = pool.submit(s.run, "slow")
        assert provider.started.wait(30)
        with pytest.raises(TurnInProgress, match="stop"):
            s.detach()
        provider.release.set()
        result = running.result(timeout=30)
        assert (result.stop_reason, result.text) == ("end_turn", "done")
        assert s.detach().session_id == s.session_id  # idle now


def test_stop_cancels_the_running_turn(opts):
    provider = opts["provider"] = GatedProvider(open=False)
    with agent_session(**opts) as s, ThreadPoolExecutor(1) as pool:
        running = pool.submit(s.run, "slow")
        assert provider.started.wait(30)
        state = s.stop()
        assert running.result(timeout=30).stop_reason == "cancelled"
    with agent_resume(state, provider=GatedProvider(), prices=PRICES) as r:
        assert prompts(r.history()) == ["slow"]  # the log was closed, the session goes on
        assert r.run("again").stop_reason == "end_turn"


async def test_astop_cancels_the_running_turn(opts):
    provider = opts["provider"] = GatedProvider(open=False)
    async with aagent_session(**opts) as s:
        running = asyncio.create_task(s.arun("slow"))
        while not provider.started.is_set():
            await asyncio.sleep(0.01)
        with pytest.raises(TurnInProgress):
            await s.adetach()
        await s.astop()
        assert (await running).stop_reason == "cancelled"


# -- what a State holds


def test_a_state_names_a_store_object_by_its_url_without_its_password(opts, tmp_path):
    class Named(FileCheckpointer):
        url = "postgresql://bob:hunter2@db.example/sessions?sslmode=require&password=hunter2"

    store = Named(tmp_path / "named")
    with agent_session(**{**opts, "store": store}) as s:
        state = s.detach()
    assert state.store == "postgresql://bob@db.example/sessions?sslmode=require"
    assert b"hunter2" not in state.dumps()
    asyncio.run(store.close())  # the caller's store: the session left it open


def test_a_store_without_a_name_cannot_be_parked(opts, tmp_path):
    class Unnamed:  # a store that cannot say its URL
        def __init__(self) -> None:
            self.inner = FileCheckpointer(tmp_path / "unnamed")

        def __getattr__(self, name: str) -> object:
            if name == "url":
                raise AttributeError(name)
            return getattr(self.inner, name)

    store = Unnamed()
    with agent_session(**{**opts, "store": store}) as s:
        with pytest.raises(CapabilityUnsupported, match="cannot be named in a State"):
            s.detach()
        assert s.run("still open").stop_reason == "end_turn"
    asyncio.run(store.inner.close())


@pytest.mark.parametrize("url", ["memory:", "sqlite:///:memory:"])
def test_an_in_process_state_is_returned_but_resumes_only_in_its_store(opts, url):
    with agent_session(**{**opts, "store": url}) as s:
        s.run("one")
        state = s.stop()
    assert state.store == url
    with pytest.raises(CapabilityUnsupported, match="lives only in the process"):
        agent_resume(state, provider=GatedProvider())


def test_an_in_process_state_resumes_with_its_store_object(opts):
    store = open_store("memory:")
    with agent_session(**{**opts, "store": store}) as s:
        s.run("one")
        state = s.detach()
    with agent_resume(state, store=store, provider=GatedProvider(), prices=PRICES) as r:
        r.run("two")
        assert prompts(r.history()) == ["one", "two"]
        assert r.cost == pytest.approx(2 * TURN_COST)


def test_the_default_store_is_named(opts, monkeypatch, tmp_path):
    monkeypatch.setattr(
        "agent_host.session.store.default_store_url", lambda: (tmp_path / "default").as_uri()
    )
    del opts["store"]
    with agent_session(**opts) as s:
        assert s.detach().store == (tmp_path / "default").as_uri()


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("postgresql://bob:hunter2@host/db", "postgresql://bob@host/db"),
        ("postgresql://:hunter2@host:5432/db", "postgresql://host:5432/db"),
        ("http://u:p@h/v1?token=t&x=1", "http://u@h/v1?x=1"),
        ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
        ("memory:", "memory:"),
    ],
)
def test_without_secrets(url, clean):
    assert without_secrets(url) == clean


GOOD = State(session_id="s1", store="memory:", workdir="/w", model="m", approval="auto")


def with_(**changes) -> bytes:
    data = json.loads(GOOD.dumps())
    data.update(changes)
    return json.dumps({k: v for k, v in data.items() if v is not ...}).encode()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[]", "JSON object"),
        (with_(harness="codex"), "'codex' harness"),
        (with_(harness=...), "harness"),
        (with_(version=99), "upgrade agent-host"),
        (with_(version="1"), "version"),
        (with_(session_id=...), "'session_id' is missing"),
        (with_(model=3), "'model' is a int"),
        (with_(session_id="x" * 513), "invalid session id"),
        (with_(approval="yolo"), "approval"),
        (with_(workdir="rel"), "absolute"),
    ],
)
def test_state_loads_refuses_what_it_cannot_resume(raw, says):
    with pytest.raises(StateIncompatible, match=says) as caught:
        State.loads(raw)
    assert error_code(caught.value) == ErrorCode.INCOMPATIBLE_STATE


def test_state_loads_its_own_bytes():
    assert State.loads(GOOD.dumps()) == GOOD
    assert json.loads(GOOD.dumps())["harness"] == "agent-host"
    assert json.loads(GOOD.dumps())["version"] == 1


# -- the package stays light


def test_import_agent_host_loads_no_engine():
    code = (
        "import sys, json; import agent_host; a = set(sys.modules);"
        "from agent_host import State, agent_session; b = set(sys.modules);"
        "print(json.dumps([sorted(a), sorted(b)]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, text=True)
    bare, facades = (set(m) for m in json.loads(out.stdout))
    assert not {"asyncio", "agent_host.session", "agent_host.harness"} & bare
    assert "agent_host.session.host" not in facades  # loaded with the first session
