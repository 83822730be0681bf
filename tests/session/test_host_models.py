"""The engine against a real OpenAI-compatible HTTP server, random cancels, and
automatic compaction."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost
from agent_host.session.pricing import cost

from .providers.fakes import OPENAI_DONE, FakeServer, openai_chunk, sse, tool_fragment
from .test_host import call, script

KEY = "sk-test-host-0123456789SECRET"


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def test_a_turn_against_an_openai_compatible_server(tmp_path, ws, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    arguments = json.dumps({"path": "hello.py", "content": "print('hi')\n"})
    server = FakeServer(
        [
            sse(
                [
                    openai_chunk({"role": "assistant", "content": "Writing it."}),
                    openai_chunk(tool_fragment(0, id="call_1", name="write_file", arguments="")),
                    openai_chunk(tool_fragment(0, arguments=arguments[:20])),
                    openai_chunk(tool_fragment(0, arguments=arguments[20:])),
                    openai_chunk(finish="tool_calls"),
                    openai_chunk(usage=(100, 20)),
                    OPENAI_DONE,
                ]
            ),
            sse(
                [
                    openai_chunk({"content": "Done: hello.py"}),
                    openai_chunk(finish="stop"),
                    openai_chunk(usage=(150, 5)),
                    OPENAI_DONE,
                ]
            ),
        ]
    ).start()
    seen = []
    host = AgentHost(
        store=tmp_path / "store",
        model="openai/gpt-4.1-mini",
        workdir=ws,
        base_url=server.url + "/v1",
        api_key=KEY,
        on_event=lambda sid, item: seen.append(item),
    )
    try:
        result = await host.send("write hello.py")
    finally:
        await host.close()
        server.stop()
    assert result.stop_reason == "end_turn"
    assert result.text == "Writing it.\n\nDone: hello.py"
    assert (ws / "hello.py").read_text() == "print('hi')\n"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (250, 25)
    assert result.cost == pytest.approx(
        cost("openai/gpt-4.1-mini", 100, 20) + cost("openai/gpt-4.1-mini", 150, 5)
    )
    assert result.cost > 0 and host.cost == pytest.approx(result.cost)
    second = server.received[1].body["messages"]
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": second[-1]["content"],
    }
    assert second[-2]["tool_calls"][0]["function"]["name"] == "write_file"
    assert server.received[0].headers["authorization"] == f"Bearer {KEY}"
    kinds = [type(i).__name__ for i in seen]
    assert "TextDelta" in kinds and "FileSnapshot" in kinds and kinds[-1] == "TurnEnd"
    assert all(KEY not in repr(i) for i in seen)


async def test_random_cancels_never_leave_a_call_without_its_result(tmp_path, ws):
    """Cancel at random moments of a slow script, many times over one session."""
    rng = random.Random(20261129)
    steps = []
    for n in range(40):
        steps.append(
            {
                "text": "step " + " ".join(f"w{n}-{i}" for i in range(6)),
                "tool_calls": [
                    call("write_file", path=f"f{n}.txt", content=str(n)),
                    call("run_command", command="sleep 0.05"),
                ],
                "delay_ms": 15,
            }
        )
    host = AgentHost(store=tmp_path / "store", model=script(tmp_path, steps), workdir=ws)
    logged = 0
    for attempt in range(15):
        before = await host.store.read(host.session_id)
        task = asyncio.create_task(host.send(f"attempt {attempt}"))
        await asyncio.sleep(rng.uniform(0.0, 0.25))
        await host.cancel()
        result = await task
        assert result.stop_reason in ("cancelled", "max_turns", "end_turn")
        events = await host.store.read(host.session_id)
        if result.checkpoint == 0:
            # The cancel landed before the prompt reached the log: nothing was written.
            assert result.stop_reason == "cancelled"
            assert [e.seq for e in events] == [e.seq for e in before]
            continue
        logged += 1
        prompt = next(e for e in events if e.seq == result.checkpoint)
        assert isinstance(prompt, ev.UserPrompt) and prompt.text == f"attempt {attempt}"
        calls = [e.call_id for e in events if isinstance(e, ev.ToolCall)]
        results = [e.call_id for e in events if isinstance(e, ev.ToolResult)]
        assert sorted(calls) == sorted(results), f"orphan after attempt {attempt}"
        assert isinstance(events[-1], ev.TurnEnd)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert logged >= 5, "most cancels landed before their turns began: the test saw nothing"
    await host.close()


async def test_compaction_runs_by_itself_past_the_context_share(tmp_path, ws):
    long = "x" * 2000
    steps = [{"text": long}, {"text": long}, {"text": long}, {"text": "short"}]
    progress = []
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, steps),
        workdir=ws,
        context_window=1500,
        auto_compact=0.8,
        on_event=lambda sid, item: progress.append(item),
    )
    for n in range(4):
        await host.send(f"prompt {n}")
    events = await host.store.read(host.session_id)
    compactions = [e for e in events if isinstance(e, ev.Compaction)]
    assert compactions, "no automatic compaction happened"
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    history = await host.history()
    assert history[0]["content"].startswith("Summary")
    assert history[-1] == {"role": "assistant", "content": "short"}
    assert any(type(p).__name__ == "CompactionProgress" for p in progress)
    await host.close()
