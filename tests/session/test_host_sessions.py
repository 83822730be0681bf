"""AgentHost's session semantics that users bring from LiteAgent, LiteLLM and the
Agents SDK: a closed host refuses, a restore makes its session current, the cost
follows the log, an explicit model wins, a cleared session keeps its identity."""

from __future__ import annotations

import pytest

from agent_host.rpc.errors import ErrorCode
from agent_host.server.protocol import error_code
from agent_host.session import events as ev
from agent_host.session.errors import HostClosed
from agent_host.session.host import AgentHost

from .test_host import call, script


def priced(model: str) -> dict:
    return {model: (1_000_000.0, 0.0)}  # a dollar per input token: costs are visible


def usage(tokens: int) -> dict:
    return {"input_tokens": tokens, "output_tokens": 0}


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def test_a_closed_host_refuses_every_call(tmp_path, ws):
    model = script(tmp_path, [{"tool_calls": [call("run_command", command="sleep 30")]}])
    host = AgentHost(store="memory:", model=model, workdir=ws)
    await host.close()
    for attempt in (
        host.send("hi"),
        host.history(),
        host.add_items([{"role": "user", "content": "x"}]),
        host.get_items(),
        host.resume("other"),
        host.list_sessions(),
    ):
        with pytest.raises(HostClosed, match="closed"):
            await attempt
    assert error_code(HostClosed("x")) == ErrorCode.HOST_CLOSED
    assert await host.store.list() == []  # nothing ran: no session was written
    with pytest.raises(HostClosed):
        async with host:
            pass


async def test_async_with_closes_the_host(tmp_path, ws):
    async with AgentHost(
        store="memory:", model=script(tmp_path, [{"text": "ok"}]), workdir=ws
    ) as host:
        assert (await host.send("hi")).text == "ok"
    with pytest.raises(HostClosed):
        await host.send("again")


async def test_restore_makes_its_session_current_and_refreshes_the_cost(tmp_path, ws):
    steps = [{"text": "one", "usage": usage(2)}, {"text": "two", "usage": usage(3)}]
    model = script(tmp_path, steps)
    host = AgentHost(store="memory:", model=model, workdir=ws, prices=priced(model))
    first = await host.send("first")
    await host.send("second")
    assert host.cost == pytest.approx(5.0)
    await host.new_session()
    assert host.cost == 0.0
    await host.restore(first.session_id, seq=(await host.list_checkpoints(first.session_id))[1].seq)
    assert host.session_id == first.session_id
    # What was spent stays spent: a rewind refunds nothing.
    assert host.cost == pytest.approx(5.0) == await host.session_cost()
    await host.new_session()
    await host.undo_restore(first.session_id)
    assert host.session_id == first.session_id and host.cost == pytest.approx(5.0)
    await host.close()


async def test_pop_and_clear_refresh_the_cost(tmp_path, ws):
    steps = [{"text": "one", "usage": usage(2)}, {"text": "two", "usage": usage(3)}]
    model = script(tmp_path, steps)
    host = AgentHost(store="memory:", model=model, workdir=ws, prices=priced(model))
    await host.send("first")
    await host.send("second")
    assert await host.pop_item() == {"role": "assistant", "content": "two"}
    assert host.cost == pytest.approx(2.0)  # the usage logged with the popped reply went too
    await host.clear_session()
    assert host.cost == 0.0
    await host.close()


async def test_an_explicit_model_wins_and_the_session_records_it(tmp_path, ws):
    first = script(tmp_path, [{"text": "from the first script"}] * 9, "one.json")
    other = script(tmp_path, [{"text": "from the other script"}] * 9, "two.json")
    host = AgentHost(store="memory:", model=first, workdir=ws)
    assert (await host.send("hi")).text == "from the first script"
    assert (await host.send("switch", model=other)).text == "from the other script"
    # The choice stays with the session: the next turn, and another host, use it.
    assert (await host.send("and now")).text == "from the other script"
    again = AgentHost(store=host.store, model=first, workdir=ws)
    await again.resume(host.session_id)
    assert (await again.send("still")).text == "from the other script"
    events = await host.store.read(host.session_id)
    assert events[0].model == first  # started with it
    prompts = [e for e in events if type(e) is ev.UserPrompt]
    assert [p.model for p in prompts] == [None, other, None, None]
    usages = [e.model for e in events if type(e) is ev.Usage]
    assert usages[1:] == [other] * (len(usages) - 1)
    # Rewinding to before the switch rewinds the choice.
    await again.restore(host.session_id, prompts[1].seq)
    back = await again.send("back")
    assert back.text == "from the first script"
    await again.close()
    await host.close()


async def test_a_cleared_session_keeps_its_folder_model_and_date(tmp_path, ws):
    model = script(tmp_path, [{"text": "ok"}])
    host = AgentHost(store="memory:", model=model, workdir=ws)
    await host.send("hi")
    await host.clear_session()
    assert await host.get_items() == []
    [info] = await host.list_sessions()
    assert info.workspace == str(ws)
    [started] = await host.store.read(host.session_id)
    assert started.model == model
    assert info.updated_at > 1_000_000_000  # not 1970
    await host.close()


async def test_a_session_started_by_add_items_has_a_folder_and_model(tmp_path, ws):
    host = AgentHost(store="memory:", model="openai/gpt-4.1-mini", workdir=ws)
    await host.add_items([])  # nothing to add: no session is created
    assert await host.list_sessions() == []
    await host.add_items([{"role": "user", "content": "hi"}])
    [info] = await host.list_sessions()
    assert info.workspace == str(ws)
    started = (await host.store.read(host.session_id))[0]
    assert started.model == "openai/gpt-4.1-mini"
    assert [c.seq for c in await host.list_checkpoints()] == [2]
    await host.close()


async def test_items_in_and_out(tmp_path, ws):
    host = AgentHost(store="memory:", workdir=ws)
    chat = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "looking",
            "tool_calls": [{"id": "c1", "function": {"name": "list_files", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    await host.add_items(chat)
    # Chat-completions messages are stored as the Responses items they stand for.
    assert await host.get_items() == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "looking"},
        {"type": "function_call", "call_id": "c1", "name": "list_files", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
    ]
    assert await host.get_items(limit=1) == [
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"}
    ]
    # pop removes exactly the last item: no invented "interrupted" result is left.
    assert (await host.pop_item())["type"] == "function_call_output"
    assert (await host.get_items())[-1]["type"] == "function_call"
    assert len(await host.get_items()) == 3
    with pytest.raises(ValueError, match="item 0 is not a JSON object"):
        await host.add_items(["not an item"])
    with pytest.raises(ValueError, match="item 1 cannot be stored as JSON"):
        await host.add_items([{"role": "user", "content": "ok"}, {"x": object()}])
    assert len(await host.get_items()) == 3  # a bad batch adds nothing
    await host.close()


async def test_items_of_our_own_turns(tmp_path, ws):
    steps = [
        {"text": "", "tool_calls": [call("list_files")]},
        {"text": "Nothing here."},
    ]
    host = AgentHost(store="memory:", model=script(tmp_path, steps), workdir=ws)
    await host.send("what is here?")
    items = await host.get_items()
    call_id = items[1]["call_id"]
    assert items == [
        {"role": "user", "content": "what is here?"},
        {"type": "function_call", "call_id": call_id, "name": "list_files", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": items[2]["output"]},
        {"role": "assistant", "content": "Nothing here."},
    ]
    await host.close()


async def test_popping_past_a_compaction_keeps_the_summary(tmp_path, ws):
    host = AgentHost(store="memory:", workdir=ws)
    await host.add_items(
        [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "1"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "2"},
        ]
    )
    state = await host._state(host.session_id)
    await state.append(
        [
            ev.Compaction(
                summary="they counted", first_seq=1, last_seq=3, tokens_before=9, tokens_after=5
            )
        ]
    )
    summary = {"role": "user", "content": "Summary of the conversation so far:\nthey counted"}
    two = {"role": "user", "content": "two"}
    assert await host.get_items() == [summary, two, {"role": "assistant", "content": "2"}]
    assert (await host.pop_item())["content"] == "2"
    assert await host.get_items() == [summary, two]
    assert await host.pop_item() == two
    assert await host.get_items() == [summary]
    assert await host.pop_item() == summary
    assert await host.get_items() == []
    assert [type(e) for e in await host.store.read(host.session_id)] == [ev.SessionStarted]
    await host.close()
