"""Issue 21 items 5, 16 and 4 on ACP: a line that is no JSON-RPC message, or not
JSON at all, is answered (-32600 / -32700, id null) and the agent goes on serving;
a huge value where an array belongs is one prompt, short -32602 naming the field.
Before: ``[]`` or ``null`` killed the process, ``"str"`` or ``123`` left it deaf,
bad JSON went unanswered, and ``prompt: [1] * 2**20`` took 38 s and 1.5 GB."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.server.wire import status_kib

from .raw import RawAgent

pytestmark = pytest.mark.timeout(180)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
LIST = {"jsonrpc": "2.0", "id": 99, "method": "session/list", "params": {}}

NOT_MESSAGES = {
    "empty-array": b"[]",
    "batch": json.dumps([LIST]).encode(),
    "string": b'"str"',
    "null": b"null",
    "number": b"123",
    "true": b"true",
    "empty-object": b"{}",
    "no-jsonrpc": b'{"id": 5, "method": "session/list", "params": {}}',
    "object-id": b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "session/list"}',
    "number-method": b'{"jsonrpc": "2.0", "method": 5}',
    "result-and-error": b'{"jsonrpc": "2.0", "id": 7, "result": 1, "error": {}}',
}
NOT_JSON = {
    "bad-json": b"{bad",
    "truncated": b'{"jsonrpc": "2.0", "id": 1, "method": "session/li',
    "bad-utf8": b'{"jsonrpc": "2.0", "id": 1, "method": "session/list", "x": "\xff\xfe"}',
    "utf16-bom": b"\xff\xfe{\x00}\x00",
    "two-objects": json.dumps(LIST).encode() * 2,
    "deep-nesting": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
}


@pytest.fixture
def agent(tmp_path: Path, workspace: Path) -> Iterator[RawAgent]:
    @contextmanager
    def started() -> Iterator[RawAgent]:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"steps": [{"text": "ok"}] * 20}))
        raw = RawAgent(workspace, tmp_path / "store", f"scripted:{script}")
        try:
            answer = raw.call("initialize", {"protocolVersion": 1}, timeout=60)
            assert "result" in answer, answer
            yield raw
        finally:
            code = raw.close()
        assert code == 0, f"exit code {code}{raw.state()}"
        raw.assert_protocol_only()

    with started() as raw:
        yield raw


def null_id_errors(agent: RawAgent) -> list[dict]:
    return [m["error"] for m in agent.messages if "error" in m and m["id"] is None]


def answered_after(agent: RawAgent, line: bytes) -> dict:
    """The error ``line`` got (id null or its own), checked to be followed by a
    session/list that is answered."""
    before = len(agent.messages)
    agent.write(line + b"\n")
    listed = agent.call("session/list", {})
    assert "result" in listed, listed
    errors = [m for m in agent.messages[before:] if "error" in m]
    assert len(errors) == 1, (line[:100], agent.messages[before:])
    assert agent.proc.poll() is None, agent.state()
    return errors[0]


OWN_IDS = {"no-jsonrpc": 5, "result-and-error": 7}
"""Invalid messages whose id is usable: their error carries it."""


def test_a_line_that_is_no_message_is_invalid_request(agent):
    for name, line in NOT_MESSAGES.items():
        answer = answered_after(agent, line)
        assert answer["error"]["code"] == INVALID_REQUEST, (name, answer)
        assert answer["id"] == OWN_IDS.get(name), (name, answer)
        if line.startswith(b"["):
            assert "batches are not supported" in answer["error"]["message"]


def test_a_line_that_is_not_json_is_a_parse_error(agent):
    for name, line in NOT_JSON.items():
        answer = answered_after(agent, line)
        message = answer["error"]["message"]
        error = {"code": PARSE_ERROR, "message": message}
        assert answer == {"jsonrpc": "2.0", "id": None, "error": error}, name
        assert message.startswith("Parse error"), (name, message)


def test_all_the_bad_lines_in_a_row_then_a_turn(agent, workspace):
    for line in [*NOT_MESSAGES.values(), *NOT_JSON.values()]:
        agent.write(line + b"\n")
    session = agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = session["result"]["sessionId"]
    prompt = [{"type": "text", "text": "hi"}]
    answer = agent.call("session/prompt", {"sessionId": session_id, "prompt": prompt})
    assert answer["result"]["stopReason"] == "end_turn", answer
    assert len(null_id_errors(agent)) == len(NOT_MESSAGES) + len(NOT_JSON) - len(OWN_IDS)


MIB = 1 << 20
OVERSIZED = {
    # id: (field the message names, method, params; "SID" for the session's id)
    "prompt-3mib-string": (
        "prompt",
        "session/prompt",
        {"sessionId": "SID", "prompt": "x" * (3 * MIB)},
    ),
    "prompt-million-numbers": (
        "prompt",
        "session/prompt",
        {"sessionId": "SID", "prompt": [1] * MIB},
    ),
    "prompt-10000-bad-blocks": (
        "prompt",
        "session/prompt",
        {"sessionId": "SID", "prompt": [1] * 10_000},
    ),
    "mcp-servers-3mib-string": (
        "mcpServers",
        "session/new",
        {"cwd": "CWD", "mcpServers": "x" * (3 * MIB)},
    ),
    "mcp-servers-million": ("mcpServers", "session/new", {"cwd": "CWD", "mcpServers": [{}] * MIB}),
    "meta-list": ("_meta.x", "session/list", {"_meta": {"x": ["y"] * MIB}}),
}


def test_an_oversized_list_param_is_refused_at_once(agent, workspace):
    session = agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = session["result"]["sessionId"]
    peak_before = status_kib(agent.proc.pid, "VmHWM")
    for name, (field, method, params) in OVERSIZED.items():
        params = {
            k: session_id if v == "SID" else str(workspace) if v == "CWD" else v
            for k, v in params.items()
        }
        started = time.monotonic()
        bad = agent.send(method, params)
        listed = agent.send("session/list", {})
        answer = agent.response(bad, timeout=60)
        assert answer is not None, f"{name}: no answer within 60 s{agent.state()}"
        took = time.monotonic() - started
        other = agent.response(listed, timeout=60)
        assert other is not None and "result" in other, (name, other)
        error = answer["error"]
        assert error["code"] == INVALID_PARAMS, (name, error)
        assert len(json.dumps(error)) < 2000, (name, len(json.dumps(error)))
        assert field in error["message"], (name, error["message"])
        assert took < 5, f"{name}: answered after {took:.1f} s"
        growth = status_kib(agent.proc.pid, "VmHWM") - peak_before
        assert growth < 300 * 1024, f"{name}: peak RSS grew by {growth // 1024} MiB"


@pytest.mark.slow
def test_a_line_over_the_limit_is_skipped_unread(agent):
    from agent_host.jsonrpc.limits import LARGEST_MESSAGE

    chunk = b'"' + b"x" * (MIB - 1)
    before = len(agent.messages)
    for _ in range(LARGEST_MESSAGE // MIB + 2):
        agent.write(chunk)
    answer = answered_after(agent, b"")
    assert answer["error"]["code"] == INVALID_REQUEST
    assert str(LARGEST_MESSAGE) in answer["error"]["message"]
    assert len(agent.messages) - before == 2  # the refusal and the list
