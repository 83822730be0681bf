"""Issue 23 finding 4: nothing about a session goes out before the response that
names it. ``available_commands_update`` used to be started as a task when
session/new was handled and could be written before its answer; CodeCompanion,
which keys updates by the ids it knows, dropped it (1 run in 8) and ``/rewind``
went to the model as text. Read here line by line, in the order written."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .raw import RawAgent

pytestmark = pytest.mark.timeout(180)

RUNS = 20


@pytest.fixture
def agent(tmp_path: Path, workspace: Path) -> Iterator[RawAgent]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "ok"}] * 4}))
    raw = RawAgent(workspace, tmp_path / "store", f"scripted:{script}")
    try:
        answer = raw.call("initialize", {"protocolVersion": 1}, timeout=60)
        assert "result" in answer, answer
        yield raw
    finally:
        code = raw.close()
    assert code == 0, f"exit code {code}{raw.state()}"
    raw.assert_protocol_only()


def naming(messages: list[dict], sid: str) -> list[dict]:
    """The messages that name ``sid``, in the order they were written."""
    return [m for m in messages if sid in json.dumps(m)]


def commands_of(agent: RawAgent, sid: str) -> dict:
    update = agent.wait_for(
        lambda m: (
            m.get("method") == "session/update"
            and m["params"]["sessionId"] == sid
            and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        )
    )
    assert update is not None, f"no available_commands_update for {sid}{agent.state()}"
    return update


def test_the_new_sessions_answer_comes_before_its_commands(agent: RawAgent, workspace: Path):
    for _ in range(RUNS):
        answer = agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        sid = answer["result"]["sessionId"]
        commands_of(agent, sid)
        first, *_ = naming(agent.messages, sid)
        assert first is answer, f"{sid} was named before its session/new answer: {first}"


def test_two_sessions_opened_at_once_each_answered_first(agent: RawAgent, workspace: Path):
    for _ in range(RUNS):
        params = {"cwd": str(workspace), "mcpServers": []}
        one, two = agent.send("session/new", params), agent.send("session/new", params)
        answers = [agent.response(one), agent.response(two)]
        for answer in answers:
            assert answer is not None and "result" in answer, answer
            sid = answer["result"]["sessionId"]
            commands_of(agent, sid)
            assert naming(agent.messages, sid)[0] is answer


def test_a_fork_is_answered_before_its_commands(agent: RawAgent, workspace: Path):
    sid = agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})["result"][
        "sessionId"
    ]
    said = agent.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert "result" in said, said
    for _ in range(5):
        answer = agent.call(
            "session/fork", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
        )
        fork = answer["result"]["sessionId"]
        commands_of(agent, fork)
        assert naming(agent.messages, fork)[0] is answer


def test_a_failed_new_session_announces_nothing(agent: RawAgent, tmp_path: Path):
    before = len(agent.messages)
    answer = agent.call("session/new", {"cwd": str(tmp_path / "missing"), "mcpServers": []})
    assert "error" in answer
    time.sleep(0.3)
    assert [m for m in agent.messages[before:] if m.get("method") == "session/update"] == []
