"""The harness facades (agent_host.harness) beyond run(): a turn and a compaction as
streams, LiteLLM's call shape (a harness first, ``sandbox=``), a State whose session
was deleted, sessions=False. Offline: the scripted model."""

from __future__ import annotations

import asyncio
import enum
import json
from pathlib import Path

import pytest

from agent_host import StateIncompatible, aagent, aagent_session, agent, agent_resume, agent_session
from agent_host.session import events as ev
from agent_host.session import open_store
from agent_host.session.compaction import CompactionProgress, CompactResult
from agent_host.session.errors import CapabilityUnsupported, ModelError
from agent_host.session.model import TextDelta
from agent_host.session.turn import TurnResult


def script(tmp_path: Path, steps: list[dict], name: str = "script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


WRITE = {"name": "write_file", "arguments": {"path": "a.py", "content": "v1\n"}}
WRITE_THEN_SAY = [{"text": "Writing a.py.", "tool_calls": [WRITE]}, {"text": "Created a.py."}]
SLOW = {"text": " ".join(f"word{i}" for i in range(60)), "delay_ms": 20}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


def opts(tmp_path: Path, ws: Path, steps: list[dict]) -> dict:
    return {"model": script(tmp_path, steps), "store": (tmp_path / "store").as_uri(), "workdir": ws}


def kinds(items: list) -> list[str]:
    return [type(i).__name__ for i in items]


def in_order(items: list) -> None:
    """Text before the tool call, the call before its file change, that before its
    result; the TurnResult last and only there."""
    order = kinds(items)
    assert order[-1] == "TurnResult" and order.count("TurnResult") == 1
    assert order.index("TextDelta") < order.index("ToolCall") < order.index("FileSnapshot")
    assert order.index("FileSnapshot") < order.index("ToolResult") < len(order) - 1


async def log_of(store: str, sid: str) -> list[ev.Event]:
    opened = open_store(store)
    try:
        return await opened.read(sid)
    finally:
        await opened.close()


# -- a turn as a stream


def test_stream_yields_the_turn_in_order_and_counts_its_cost(tmp_path, ws):
    with agent_session(**opts(tmp_path, ws, WRITE_THEN_SAY)) as s:
        items = list(s.stream("write a.py"))
        in_order(items)
        result = items[-1]
        assert result.stop_reason == "end_turn" and result.text.endswith("Created a.py.")
        assert s.cost == result.cost
        assert [m["role"] for m in s.history()][0] == "user"
    assert (ws / "a.py").read_text() == "v1\n"


async def test_astream_yields_the_turn_in_order(tmp_path, ws):
    async with aagent_session(**opts(tmp_path, ws, WRITE_THEN_SAY)) as s:
        items = [item async for item in s.astream("write a.py")]
        in_order(items)


async def test_awaiting_astream_is_arun(tmp_path, ws):
    async with aagent_session(**opts(tmp_path, ws, [{"text": "hi"}])) as s:
        result = await s.astream("hello")
        assert isinstance(result, TurnResult) and result.text == "hi"


def test_a_sync_sessions_turn_streams_into_another_event_loop(tmp_path, ws):
    with agent_session(**opts(tmp_path, ws, WRITE_THEN_SAY)) as s:

        async def read() -> list:
            return [item async for item in s.astream("write a.py")]

        in_order(asyncio.run(read()))  # the host lives on the session's own thread


@pytest.mark.parametrize("how", ["sync", "async"])
def test_leaving_a_stream_early_cancels_the_turn_and_the_session_goes_on(tmp_path, ws, how):
    steps = [{"tool_calls": [WRITE]}, SLOW, {"text": "again"}]
    options = opts(tmp_path, ws, steps)
    with agent_session(**options) as s:
        if how == "sync":
            for item in s.stream("write, then talk"):
                if isinstance(item, TextDelta):
                    break  # the generator is closed: the turn is cancelled
        else:

            async def leave() -> None:
                async with s.astream("write, then talk") as turn:
                    async for item in turn:
                        if isinstance(item, TextDelta):
                            break

            asyncio.run(leave())
        assert s.run("go on").text == "again"  # nothing holds the session
        sid = s.session_id
    log = asyncio.run(log_of(options["store"], sid))
    ends = [e.stop_reason for e in log if type(e) is ev.TurnEnd]
    assert ends == ["cancelled", "end_turn"]
    called = {e.call_id for e in log if type(e) is ev.ToolCall}
    assert called == {e.call_id for e in log if type(e) is ev.ToolResult}
    assert (ws / "a.py").read_text() == "v1\n"


def test_an_error_in_the_turn_raises_from_the_stream(tmp_path, ws):
    with agent_session(**opts(tmp_path, ws, [])) as s:
        seen = []
        with pytest.raises(ModelError, match="exhausted"):
            for item in s.stream("hello"):
                seen.append(item)
        assert "UserPrompt" in kinds(seen)
        assert s.detach().session_id == s.session_id  # no turn counted as running


# -- compaction


def long_text(tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(200))


async def test_acompact_streams_its_progress_and_resolves_to_before_and_after(tmp_path, ws):
    steps = [{"text": long_text("a")}, {"text": long_text("b")}, {"text": "summary"}]
    options = {**opts(tmp_path, ws, steps), "auto_compact": None}
    async with aagent_session(**options) as s:
        await s.arun("one")
        await s.arun("two")
        *progress, result = [item async for item in s.acompact()]
        assert isinstance(result, CompactResult) and result.before > result.after
        stages = [p.stage for p in progress if isinstance(p, CompactionProgress)]
        assert stages == ["started", "summarising", "done"]
        again = await s.acompact()  # awaited: the result alone
        assert not again.compacted and again.before == again.after == result.after


def test_compact_from_sync_code(tmp_path, ws):
    with agent_session(**{**opts(tmp_path, ws, [{"text": "a"}]), "auto_compact": None}) as s:
        s.run("one")
        result = s.compact()
        assert (result.compacted, result.before) == (False, result.after)


def test_without_sessions_the_facade_refuses_compaction(tmp_path, ws):
    with agent_session(model=script(tmp_path, [{"text": "a"}]), workdir=ws, sessions=False) as s:
        s.run("one")
        with pytest.raises(CapabilityUnsupported, match="compact .*sessions=False"):
            s.compact()


# -- a State whose session is gone


def test_a_deleted_sessions_state_raises_state_incompatible(tmp_path, ws):
    options = opts(tmp_path, ws, [{"text": "a"}])
    with agent_session(**options) as s:
        s.run("one")
        state = s.detach()

    async def delete() -> None:
        store = open_store(options["store"])
        try:
            await store.delete(state.session_id)
        finally:
            await store.close()

    asyncio.run(delete())
    with pytest.raises(StateIncompatible, match="not in its store: it was deleted"):
        agent_resume(state, model=options["model"])


def test_a_parked_session_with_no_turn_yet_resumes(tmp_path, ws):
    options = opts(tmp_path, ws, [{"text": "a"}])
    with agent_session(**options) as s:
        state = s.detach()  # nothing ran: the session is stored now, so it can resume
    with agent_resume(state, model=options["model"]) as r:
        assert r.session_id == state.session_id
        assert r.run("one").text == "a"


# -- LiteLLM's call shape


class Harness(enum.Enum):  # as LiteLLM's: a runtime to drive
    CLAUDE_CODE = "claude_code"
    CODEX = "codex"
    AGENT_HOST = "agent-host"


def test_the_seeds_call_shape_runs_with_agent_hosts_own_harness(tmp_path, ws):
    options = opts(tmp_path, ws, [{"text": "a"}])  # each new session starts the script
    with agent_session(Harness.AGENT_HOST, sandbox=None, **options) as s:
        assert s.run("one").text == "a"
    with agent_session("agent-host", sandbox="full", **options) as s:
        assert s.run("two").text == "a"
    assert agent("agent-host", "three", sandbox=None, **options).text == "a"


async def test_aagent_takes_the_harness_first(tmp_path, ws):
    options = opts(tmp_path, ws, [{"text": "a"}])
    assert (await aagent(Harness.AGENT_HOST, "one", sandbox=None, **options)).text == "a"


@pytest.mark.parametrize("harness", [Harness.CODEX, Harness.CLAUDE_CODE, "codex"])
def test_another_harness_is_refused_saying_agent_host_runs_its_own(tmp_path, ws, harness):
    with pytest.raises(CapabilityUnsupported, match="agent-host runs its own harness") as caught:
        agent_session(harness, **opts(tmp_path, ws, []))
    name = "codex" if harness == "codex" else harness.name
    assert name in str(caught.value)
    with pytest.raises(CapabilityUnsupported, match="own harness"):
        asyncio.run(aagent(harness, "hi", **opts(tmp_path, ws, [])))


class Box:  # a sandbox object, as LiteLLM's sandbox.docker(...) returns
    pass


@pytest.mark.parametrize("sandbox", [Box(), "docker"])
def test_a_sandbox_to_run_in_is_refused_naming_the_alternative(tmp_path, ws, sandbox):
    options = opts(tmp_path, ws, [])
    for make in (
        lambda: agent_session(Harness.AGENT_HOST, sandbox=sandbox, **options),
        lambda: agent("hi", sandbox=sandbox, **options),
    ):
        with pytest.raises(CapabilityUnsupported, match="confines its commands itself") as caught:
            make()
        assert "workspace-write" in str(caught.value) and "sandbox='full'" in str(caught.value)
    assert not (tmp_path / "store").exists()  # refused before anything opened


@pytest.mark.parametrize(
    ("sandbox", "mode"),
    [
        (None, "workspace-write"),
        ("read-only", "read-only"),
        ("none", "full"),
        ({"mode": "full"}, "full"),
    ],
)
def test_the_sandbox_names_the_hosts_policy(tmp_path, ws, sandbox, mode, monkeypatch):
    monkeypatch.delenv("AGENT_HOST_SANDBOX", raising=False)
    with agent_session(sandbox=sandbox, **opts(tmp_path, ws, [{"text": "a"}])) as s:
        assert s._host.sandbox.policy.mode == mode  # (the facade keeps its host private)


async def test_a_stream_dropped_mid_way_cancels_its_turn_and_the_session_parks(tmp_path, ws):
    options = opts(tmp_path, ws, [SLOW, {"text": "again"}])
    async with aagent_session(**options) as s:
        async for item in s.astream("talk"):  # no aclose: dropped at the break
            if isinstance(item, TextDelta):
                break
        state = await s.adetach()  # not refused: no turn is counted as running
    log = await log_of(options["store"], state.session_id)
    assert [e.stop_reason for e in log if type(e) is ev.TurnEnd] == ["cancelled"]
