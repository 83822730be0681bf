"""The ACP v1 schema check (schema_check.py) catches what it is there to catch: a
message the schema's top level lets through as an extension, but whose method's
params, or whose answer to the client's request, is off; an answer to nothing; a
broken envelope; a line that is not JSON. And it passes good traffic. ``slow``:
the first run on a machine installs the pinned SDK (npm ci)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import schema_check

pytestmark = pytest.mark.slow

NEW_SESSION = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}
EXT_ASK = {"jsonrpc": "2.0", "id": 2, "method": "_agent-host/checkpoints", "params": {}}
CHUNK = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}


def update(content: dict) -> dict:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", **content}}


def numbered(problems: list[str]) -> set[int]:
    return {int(p.split()[2]) for p in problems}


def test_bad_messages_the_top_level_lets_through_are_each_caught():
    sent = [
        update({"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}}),
        {"jsonrpc": "2.0", "id": 1, "result": {"modes": None}},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "fs/write_text_file", "params": {"path": "a"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "bad"}},
        {"id": 2, "result": {}},
        {"jsonrpc": "2.0", "method": "session/unknown", "params": {}},
    ]
    problems = schema_check.problems(sent, [NEW_SESSION, EXT_ASK])
    assert numbered(problems) == set(range(len(sent))), problems
    assert any("SessionNotification" in p for p in problems)
    assert any("NewSessionResponse" in p for p in problems)
    assert any("answers no request" in p for p in problems)
    assert any("WriteTextFileRequest" in p for p in problems)
    assert any("Error at /code" in p for p in problems)
    assert any("JSON-RPC" in p and "agent message 5" in p for p in problems)
    assert any("'session/unknown' is no ACP v1 notification" in p for p in problems)


def test_good_traffic_passes_extensions_included():
    sent = [
        update({"update": CHUNK}),
        {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "id": 2, "result": {"anything": ["goes"]}},
        {"jsonrpc": "2.0", "method": "_agent-host/notice", "params": {"free": "form"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "no key"}},
    ]
    assert schema_check.problems(sent, [NEW_SESSION, EXT_ASK]) == []


def test_a_transcript_is_read_in_wire_order(tmp_path: Path):
    # The answer comes before the request it would answer: in wire order, it
    # answers nothing. And a line that is not JSON is named.
    rows = [
        {"from": "agent", "line": json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})},
        {"from": "client", "line": json.dumps(NEW_SESSION)},
        {"from": "agent", "line": "{not json"},
        {"from": "agent", "line": json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})},
    ]
    (tmp_path / "1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    checked, wrong = schema_check.check_log_dir(tmp_path)
    assert checked == 3
    assert numbered([w.removeprefix("1.jsonl: ") for w in wrong]) == {0, 1, 2}, wrong
    assert "answers no request" in wrong[0] and "not JSON" in wrong[1]
    assert "NewSessionResponse at /: 'sessionId' is a required property" in wrong[2]
