"""JSON-RPC 2.0 and LSP framing to the letter, on raw bytes to a real server.

Each test is a reproduction: before, the server answered nothing, answered the
wrong error, grew without bound, or lost the frames after a bad one.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .wire import RawServer, frame, raw_server, status_kib

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def errors_with_null_id(server: RawServer) -> list[dict]:
    return [m for m in server.messages if "error" in m and m.get("id") is None]


def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_unparsable_json_is_answered_with_a_parse_error(tmp_path, workspace):
    with raw_server(tmp_path, workspace) as server:
        for body in [b'{"jsonrpc": "2.0", "id": 1, "method": ', b"hello", b"[" * 100_000]:
            before = len(errors_with_null_id(server))
            server.write(frame(body))
            wait_for(lambda before=before: len(errors_with_null_id(server)) > before)
            error = errors_with_null_id(server)[-1]["error"]
            assert error["code"] == PARSE_ERROR and "not JSON" in error["message"], error
        server.probe()


@pytest.mark.parametrize(
    ("message", "answer_id"),
    [
        ({"jsonrpc": "2.0", "id": 1}, 1),
        ({"jsonrpc": "2.0", "id": "m", "method": 5}, "m"),
        ({"jsonrpc": "2.0", "id": 2, "result": 1, "error": {"code": 1, "message": "x"}}, 2),
        ({"jsonrpc": "1.0", "id": 3, "method": "session/list"}, 3),
        ({"id": 4, "method": "session/list"}, 4),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "session/list"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "session/list"}, None),
        ({"jsonrpc": "2.0", "method": 7}, None),
        ([{"jsonrpc": "2.0", "id": 5, "method": "session/list"}], None),
        (42, None),
    ],
)
def test_an_invalid_request_is_32600_with_its_id(tmp_path, workspace, message, answer_id):
    with raw_server(tmp_path, workspace) as server:
        server.write(frame(json.dumps(message).encode()))
        wait_for(lambda: any("error" in m and m.get("id") == answer_id for m in server.messages))
        [answer] = [m for m in server.messages if "error" in m and m.get("id") == answer_id]
        assert answer["error"]["code"] == INVALID_REQUEST, answer


def test_a_request_without_params_has_params_null(tmp_path, workspace):
    with raw_server(tmp_path, workspace) as server:
        server.write(frame({"jsonrpc": "2.0", "id": "no-params", "method": "session/list"}))
        answer = server.response("no-params")
        assert answer is not None and answer["result"]["sessions"] == [], answer
        server.write(frame({"jsonrpc": "2.0", "id": "resume", "method": "session/resume"}))
        answer = server.response("resume")
        assert answer is not None and answer["error"]["code"] == INVALID_PARAMS, answer
        assert "sessionId" in answer["error"]["message"]


def test_requests_after_shutdown_are_invalid_requests(tmp_path, workspace):
    server = RawServer()
    try:
        server.initialize(workspace, tmp_path / "store", _model(tmp_path))
        assert "error" not in server.call("shutdown")
        answer = server.call("session/list", {})
        assert answer["error"]["code"] == INVALID_REQUEST, answer
        assert "shut down" in answer["error"]["message"]
        server.notify("session/cancel", {"sessionId": "x"})  # a notification: no answer
        server.notify("exit")
        assert server.proc.wait(10) == 0
        server.assert_protocol_only()
        assert [m["id"] for m in server.messages if "id" in m] == ["raw-1", "raw-2", "raw-3"]
    finally:
        server.close()


def _model(tmp_path: Path) -> str:
    from .conftest import write_script

    return write_script(tmp_path / "s.json", [{"text": "ok"}])


@pytest.mark.slow
def test_a_200_mb_header_line_does_not_grow_the_server(tmp_path, workspace):
    with raw_server(tmp_path, workspace) as server:
        server.probe()
        before = status_kib(server.proc.pid)
        chunk = b"X" * (1 << 20)
        peak = before
        for i in range(200):
            server.write(chunk)
            if i % 20 == 0:
                peak = max(peak, status_kib(server.proc.pid))
        server.probe()
        peak = max(peak, status_kib(server.proc.pid))
        assert peak - before < 20 * 1024, f"RSS grew by {(peak - before) // 1024} MiB"


def test_a_lying_content_length_loses_only_its_frame(tmp_path, workspace):
    request = {"jsonrpc": "2.0", "id": "after", "method": "session/list", "params": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": "liar", "method": "session/list", "params": {}})
    with raw_server(tmp_path, workspace) as server:
        for lie in (-10, 1, 10, 5000):
            request["id"] = f"after{lie}"
            server.write(b"Content-Length: %d\r\n\r\n" % (len(body) + lie) + body.encode())
            server.write(frame(request))
            answer = server.response(request["id"])
            assert answer is not None, f"Content-Length off by {lie}: the next request was lost"
            assert "result" in answer, answer
        assert server.response("liar", timeout=0) is None
        # Each lie was answered with one error, id null: a parse error.
        assert [m["error"]["code"] for m in errors_with_null_id(server)] == [PARSE_ERROR] * 4
