"""A model's tool arguments that the event log's encoder cannot write as they are
(an integer past 64 bits, nesting past orjson's limit, a lone surrogate) end
neither the turn nor the log: the call is logged as the text the model wrote, the
tool answers with an error naming the argument, and the turn goes on."""

from __future__ import annotations

import json

import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost
from agent_host.session.model import RAW_ARGUMENTS_KEY

HUGE = 10**30


def script(tmp_path, arguments: dict, name: str = "read_file") -> str:
    # json writes any integer, and a lone surrogate as \\ud800: what a model streams.
    call = {"name": name, "arguments": arguments}
    first = {"text": "Reading it now, please wait.", "tool_calls": [call]}
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [first, {"text": "done"}, {"text": "again"}]}))
    return f"scripted:{path}"


def nested(depth: int) -> list:
    outer: list = []
    node = outer
    for _ in range(depth - 1):
        node.append([])
        node = node[0]
    return outer


@pytest.mark.parametrize("store_kind", ["memory", "file", "sqlite"])
async def test_an_integer_past_64_bits_is_an_argument_error_and_the_turn_goes_on(
    tmp_path, store_kind
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    store = {
        "memory": "memory:",
        "file": str(tmp_path / "store"),
        "sqlite": f"sqlite://{tmp_path / 'store.db'}",
    }[store_kind]
    model = script(tmp_path, {"path": "a.txt", "limit": HUGE})
    host = AgentHost(store=store, model=model, workdir=ws)
    try:
        result = await host.send("read a.txt")
        assert result.stop_reason == "end_turn"
        log = await host.store.read(result.session_id)
        # a second turn folds the log for the model again
        assert (await host.send("again")).stop_reason == "end_turn"
    finally:
        await host.close()
    [text] = [e.text for e in log if type(e) is ev.AssistantMessage and "Reading" in e.text]
    assert text == "Reading it now, please wait."
    [call] = [e for e in log if type(e) is ev.ToolCall]
    assert call.name == "read_file"
    assert json.loads(call.arguments[RAW_ARGUMENTS_KEY]) == {"path": "a.txt", "limit": HUGE}
    [answer] = [e for e in log if type(e) is ev.ToolResult]
    assert answer.is_error
    assert "'limit'" in answer.output and "64 bits" in answer.output
    assert type(log[-1]) is ev.TurnEnd


async def test_the_model_is_shown_the_call_as_it_wrote_it(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, {"path": "a.txt", "offset": -HUGE}),
        workdir=ws,
    )
    try:
        await host.send("read a.txt")
        [assistant] = [m for m in await host.history() if m.get("tool_calls")]
    finally:
        await host.close()
    arguments = assistant["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"path": "a.txt", "offset": -HUGE}


@pytest.mark.parametrize(
    "arguments, named",
    [
        ({"path": "a.txt", "x": nested(300)}, "'x'"),
        ({"path": "a.txt", "content": "\ud800 lone"}, None),
    ],
    ids=["nested-300-deep", "lone-surrogate"],
)
async def test_other_values_orjson_refuses_do_not_end_the_turn(tmp_path, arguments, named):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    name = "read_file" if named else "write_file"
    model = script(tmp_path, arguments, name)
    host = AgentHost(store=str(tmp_path / "store"), model=model, workdir=ws)
    try:
        result = await host.send("go")
        log = await host.store.read(result.session_id)
    finally:
        await host.close()
    assert result.stop_reason == "end_turn"
    [call] = [e for e in log if type(e) is ev.ToolCall]
    assert RAW_ARGUMENTS_KEY in call.arguments
    [answer] = [e for e in log if type(e) is ev.ToolResult]
    if named:
        assert answer.is_error and named in answer.output
    assert type(log[-1]) is ev.TurnEnd


def test_encode_keeps_every_event_writable():
    odd = ev.ToolResult(call_id="c", output="lone \ud800 surrogate")
    assert b"\\\\ud800" in ev.encode(odd, 1, 0.0)
    deep = nested(400)
    call = ev.ToolCall(call_id="c", name="t", arguments={"deep": deep, "big": 2**70})
    decoded = ev.decode(ev.encode(call, 1, 0.0))
    assert json.loads(decoded.arguments[RAW_ARGUMENTS_KEY]) == {"deep": deep, "big": 2**70}


def test_through_a_real_server_the_turn_is_answered_not_failed(tmp_path):
    from tests.server.wire import raw_server

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    call = {"name": "read_file", "arguments": {"path": "a.txt", "limit": HUGE}}
    steps = [{"text": "Reading it.", "tool_calls": [call]}, {"text": "done"}]
    with raw_server(tmp_path, ws, steps) as server:
        answer = server.call("session/send", {"prompt": "read"}, timeout=60)
        assert "result" in answer, answer
        assert answer["result"]["stopReason"] == "end_turn"
        session = answer["result"]["sessionId"]
        history = server.call("session/history", {"sessionId": session}, timeout=60)
    assert "result" in history, history
    text = json.dumps(history["result"])
    assert "Reading it." in text and "64 bits" in text and "'limit'" in text
