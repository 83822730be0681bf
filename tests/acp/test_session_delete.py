"""ACP v1's ``session/delete`` on the wire, as an editor sends it (the Python SDK's
client has no call for it): advertised, deletes the stored session, -32002 for one
it does not know, refused while a turn runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_host.acp.errors import CODES
from agent_host.service.errors import ErrorKind

from .raw import RawAgent

SLOW = "a slow answer that goes on for a while in pieces of three words"
STEPS = [{"text": "ok"}, {"text": SLOW, "delay_ms": 1000}]


@pytest.fixture
def agent(tmp_path: Path, workspace: Path) -> Iterator[RawAgent]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": STEPS}))
    raw = RawAgent(workspace, tmp_path / "store", f"scripted:{script}")
    try:
        yield raw
    finally:
        code = raw.close()
    assert code == 0, f"exit code {code}{raw.state()}"
    raw.assert_protocol_only()


def result(agent: RawAgent, method: str, params: dict) -> dict:
    answer = agent.call(method, params, timeout=60)
    assert "result" in answer, (method, answer)
    return answer["result"]


def error(agent: RawAgent, method: str, params: dict) -> dict:
    answer = agent.call(method, params, timeout=60)
    assert "error" in answer, (method, answer)
    return answer["error"]


def prompt(session_id: str, text: str) -> dict:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


def listed(agent: RawAgent) -> list[str]:
    return [s["sessionId"] for s in result(agent, "session/list", {})["sessions"]]


def test_session_delete_is_advertised_and_deletes_the_stored_session(agent, workspace):
    init = result(agent, "initialize", {"protocolVersion": 1})
    sid = result(agent, "session/new", {"cwd": str(workspace), "mcpServers": []})["sessionId"]
    assert result(agent, "session/prompt", prompt(sid, "hello"))["stopReason"] == "end_turn"
    before = listed(agent)

    deleted = result(agent, "session/delete", {"sessionId": sid})
    after = listed(agent)
    load = error(agent, "session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    again = error(agent, "session/delete", {"sessionId": sid})
    unknown = error(agent, "session/delete", {"sessionId": "no-such-session"})
    no_id = error(agent, "session/delete", {})

    assert init["agentCapabilities"]["sessionCapabilities"]["delete"] == {}
    assert sid in before
    assert deleted == {}
    assert sid not in after
    for gone in (load, again, unknown):
        assert gone["code"] == -32002, gone
        assert gone["data"] == {"kind": "SessionNotFound", "error": gone["message"]}, gone
    assert "no-such-session" in unknown["message"]
    assert no_id["code"] == -32602 and "sessionId" in no_id["message"], no_id


def test_session_delete_while_a_turn_runs_is_turn_in_progress(agent, workspace):
    result(agent, "initialize", {"protocolVersion": 1})
    sid = result(agent, "session/new", {"cwd": str(workspace), "mcpServers": []})["sessionId"]
    result(agent, "session/prompt", prompt(sid, "hello"))
    slow = agent.send("session/prompt", prompt(sid, "take your time"))
    # Its first piece of text says the turn runs (the next comes a second later).
    started = agent.wait_for(
        lambda m: (
            m.get("method") == "session/update"
            and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
            and SLOW.startswith(m["params"]["update"]["content"]["text"].strip())
        ),
        timeout=30,
    )
    assert started is not None, agent.state()
    busy = error(agent, "session/delete", {"sessionId": sid})
    agent.write(
        json.dumps(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
        ).encode()
        + b"\n"
    )
    ended = agent.response(slow, timeout=60)

    assert busy["code"] == CODES[ErrorKind.TURN_IN_PROGRESS] == -31006, busy
    assert busy["data"] == {"kind": "TurnInProgress", "error": busy["message"]}, busy
    assert ended is not None and ended["result"]["stopReason"] == "cancelled", ended
    assert sid in listed(agent), "a refused delete leaves the session"
