"""AgentHost.stream and AgentHost.compact as streams: the updates in order, the
result last; leaving early cancels; errors raise from the iterator; sessions=False
refuses every session-management method."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent_host.session import events as ev
from agent_host.session.compaction import CompactionProgress, CompactResult
from agent_host.session.errors import CapabilityUnsupported, ModelError, TurnInProgress
from agent_host.session.host import AgentHost
from agent_host.session.model import TextDelta
from agent_host.session.streaming import UpdateStream, tap
from agent_host.session.turn import TurnResult


def script(tmp_path, steps, name="script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


WRITE_A = call("write_file", path="a.py", content="v1\n")
WRITE_THEN_SAY = [
    {"text": "I will write a.py now.", "tool_calls": [WRITE_A]},
    {"text": "Created a.py."},
]


def kinds(items) -> list[str]:
    return [type(i).__name__ for i in items]


async def test_a_turn_streams_deltas_then_the_call_then_the_file_then_the_result(tmp_path, ws):
    told = []
    host = AgentHost(store="memory:", model=script(tmp_path, WRITE_THEN_SAY), workdir=ws,
                     on_event=lambda sid, item: told.append(item))  # fmt: skip
    async with host:
        items = [item async for item in host.stream("write a.py")]
    *updates, result = items
    assert isinstance(result, TurnResult) and result.stop_reason == "end_turn"
    assert result.text.endswith("Created a.py.")
    assert not any(isinstance(u, TurnResult) for u in updates), "the result is last, once"
    assert updates == told  # exactly what on_event is told, in its order
    order = kinds(updates)
    first_delta = order.index("TextDelta")
    tool_call, snapshot = order.index("ToolCall"), order.index("FileSnapshot")
    tool_result, usage = order.index("ToolResult"), order.index("Usage")
    assert first_delta < tool_call < usage < snapshot < tool_result  # usage: logged with the call
    assert "".join(u.text for u in updates[:tool_call] if isinstance(u, TextDelta)) == (
        "I will write a.py now."
    )
    assert [u.path for u in updates if isinstance(u, ev.FileSnapshot)] == ["a.py"]
    assert order[-1] == "TurnEnd" and "TextDelta" in order[tool_result:]
    assert (ws / "a.py").read_text() == "v1\n"


async def test_awaiting_a_stream_is_send(tmp_path, ws):
    async with AgentHost(store="memory:", model=script(tmp_path, [{"text": "hi"}]),
                         workdir=ws) as host:  # fmt: skip
        result = await host.stream("hello")
        assert (result.stop_reason, result.text) == ("end_turn", "hi")


async def test_leaving_early_cancels_the_turn_and_the_session_resumes_whole(tmp_path, ws):
    store = (tmp_path / "store").as_uri()
    slow = {"text": " ".join(f"word{i}" for i in range(60)), "delay_ms": 20}
    steps = [{"tool_calls": [call("write_file", path="a.py", content="v1\n")]}, slow,
             {"text": "again"}]  # fmt: skip
    model = script(tmp_path, steps)
    async with AgentHost(store=store, model=model, workdir=ws) as host:
        seen = []
        async with host.stream("write, then talk") as turn:
            async for item in turn:
                seen.append(item)
                if isinstance(item, TextDelta):
                    break  # the model is still talking
        assert "FileSnapshot" in kinds(seen)
        sid = host.session_id
        # The turn was cancelled and its log closed: nothing holds the session.
        assert not host.handle(sid).busy
    log = await _read(store, sid)
    assert type(log[-1]) is ev.TurnEnd and log[-1].stop_reason == "cancelled"
    called = {e.call_id for e in log if type(e) is ev.ToolCall}
    assert called and called == {e.call_id for e in log if type(e) is ev.ToolResult}
    texts = [e.text for e in log if type(e) is ev.AssistantMessage]
    assert texts[-1].startswith("word0") and not texts[-1].endswith("word59")

    steps_left = script(tmp_path, [{"text": "again"}], name="again.json")
    async with AgentHost(store=store, model=steps_left, workdir=ws) as again:
        await again.resume(sid)
        assert (await again.send("go on")).text == "again"
        history = await again.history()
    assert [m["content"] for m in history if m["role"] == "user"] == ["write, then talk", "go on"]
    assert (ws / "a.py").read_text() == "v1\n"


async def test_an_error_in_the_turn_raises_from_the_iterator(tmp_path, ws):
    async with AgentHost(store="memory:", model=script(tmp_path, []), workdir=ws) as host:
        seen = []
        with pytest.raises(ModelError, match="exhausted"):
            async for item in host.stream("hello"):
                seen.append(item)
        assert "UserPrompt" in kinds(seen)  # the updates before the error came through
        assert not any(isinstance(i, TurnResult) for i in seen)
        with pytest.raises(TurnInProgress):  # a refusal raises from the iterator too
            async with host.handle().exclusive():
                await anext(host.stream("while it is held"))


async def test_a_stream_runs_once(tmp_path, ws):
    async with AgentHost(store="memory:", model=script(tmp_path, [{"text": "hi"}]),
                         workdir=ws) as host:  # fmt: skip
        turn = host.stream("hello")
        assert [i async for i in turn][-1].text == "hi"
        assert [i async for i in turn] == []  # finished
        with pytest.raises(RuntimeError, match="used already"):
            await turn


async def test_a_slow_reader_holds_the_operation_up():
    done = []

    async def run() -> str:
        for i in range(20):
            await tap("s", i)
            done.append(i)
        return "end"

    stream = UpdateStream("s", run, maxsize=2)
    assert await anext(stream) == 0
    for _ in range(100):  # let the operation run ahead as far as it can
        await asyncio.sleep(0)
    assert len(done) <= 4, done  # the queue's two, the one handed out, one waiting
    assert [i async for i in stream] == [*range(1, 20), "end"]


async def test_only_the_operations_own_updates_reach_its_stream():
    async def other() -> None:
        await tap("s", "not mine")

    async def run() -> str:
        await tap("s", "mine")
        await tap("other-session", "not this session's")
        return "end"

    stream = UpdateStream("s", run)
    outside = asyncio.create_task(other())  # started outside the stream's task
    assert [i async for i in stream] == ["mine", "end"]
    await outside


# -- compaction


def long_text(tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(200))


async def test_compact_streams_its_progress_and_resolves_to_before_and_after(tmp_path, ws):
    model = script(tmp_path, [{"text": long_text("a")}, {"text": long_text("b")},
                              {"text": "short summary"}])  # fmt: skip
    async with AgentHost(store="memory:", model=model, workdir=ws, auto_compact=None) as host:
        await host.send("one")
        await host.send("two")
        items = [item async for item in host.compact()]
    *progress, result = items
    assert isinstance(result, CompactResult) and result.compacted
    assert result.before > result.after > 0
    stages = [p.stage for p in progress if isinstance(p, CompactionProgress)]
    assert stages == ["started", "summarising", "done"]
    assert "Compaction" in kinds(progress) and "Usage" in kinds(progress)


async def test_awaiting_compact_gives_the_result(tmp_path, ws):
    model = script(tmp_path, [{"text": "a"}])
    async with AgentHost(store="memory:", model=model, workdir=ws, auto_compact=None) as host:
        await host.send("one")
        result = await host.compact()
    assert (result.compacted, result.before) == (False, result.after)


# -- sessions=False


@pytest.mark.parametrize(
    ("method", "call_it"),
    [
        ("resume", lambda h: h.resume("other")),
        ("list_sessions", lambda h: h.list_sessions()),
        ("delete_session", lambda h: h.delete_session(h.session_id)),
        ("fork", lambda h: h.fork(h.session_id)),
        ("list_checkpoints", lambda h: h.list_checkpoints()),
        ("restore", lambda h: h.restore(h.session_id, 2)),
        ("undo_restore", lambda h: h.undo_restore()),
        ("compact", lambda h: h.compact()),
    ],
)
async def test_without_sessions_every_session_method_refuses(tmp_path, ws, method, call_it):
    model = script(tmp_path, [{"tool_calls": [call("write_file", path="a.py", content="1")]},
                              {"text": "done"}])  # fmt: skip
    async with AgentHost(sessions=False, model=model, workdir=ws) as host:
        await host.send("write a.py")
        with pytest.raises(CapabilityUnsupported, match=f"{method} .*sessions=False") as caught:
            await call_it(host)
        assert "sessions=True" in str(caught.value)
        assert (ws / "a.py").read_text() == "1"  # nothing was restored
        assert [m["role"] for m in await host.history()] == ["user", "assistant", "tool",
                                                             "assistant"]  # fmt: skip


async def _read(store: str, sid: str) -> list[ev.Event]:
    from agent_host.session import open_store

    opened = open_store(store)
    try:
        return await opened.read(sid)
    finally:
        await opened.close()


async def test_a_stream_dropped_mid_way_cancels_its_turn(tmp_path, ws):
    slow = {"text": " ".join(f"word{i}" for i in range(60)), "delay_ms": 20}
    model = script(tmp_path, [slow, {"text": "again"}])
    async with AgentHost(store="memory:", model=model, workdir=ws) as host:
        async for item in host.stream("talk"):  # no aclose: the stream is dropped at break
            if isinstance(item, TextDelta):
                break
        # The turn ends (cancelled, not run to its end) and the next one gets its turn.
        assert (await host.send("go on", wait=30)).text == "again"
        log = await host.store.read(host.session_id)
    assert [e.stop_reason for e in log if type(e) is ev.TurnEnd] == ["cancelled", "end_turn"]
