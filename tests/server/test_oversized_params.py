"""Issue 21 item 4: a huge value where an array belongs -- a 3 MiB string, a
million numbers -- is one prompt -32602 naming the field, not minutes of one
error per character and gigabytes of memory; other requests are answered
meanwhile. Bounds are generous: the failure took 16-110 s and 2-10 GB."""

from __future__ import annotations

import time

import pytest

from agent_host.jsonrpc.limits import MAX_LIST_ITEMS

from .wire import INVALID_PARAMS, raw_server, status_kib

pytestmark = pytest.mark.timeout(180)

MIB = 1 << 20
OVERSIZED: list[tuple[str, str, dict]] = [
    # (id, the field the error must name, method + params)
    ("context-3mib-string", "context", {"prompt": "hi", "context": "x" * (3 * MIB)}),
    ("context-1mib-string", "context", {"prompt": "hi", "context": "x" * MIB}),
    ("context-million-numbers", "context", {"prompt": "hi", "context": [1] * (1 << 20)}),
    ("mcp-servers-1mib-string", "mcpServers", {"mcpServers": "x" * MIB}),
    ("mcp-servers-bad-items", "mcpServers", {"mcpServers": ["x"] * MAX_LIST_ITEMS}),
]


@pytest.mark.parametrize(
    ("field", "params"), [o[1:] for o in OVERSIZED], ids=[o[0] for o in OVERSIZED]
)
def test_an_oversized_list_param_is_refused_at_once(tmp_path, workspace, field, params):
    method = "session/new" if "mcpServers" in params else "session/send"
    with raw_server(tmp_path, workspace) as server:
        server.probe()
        peak_before = status_kib(server.proc.pid, "VmHWM")
        started = time.monotonic()
        bad = server.send(method, params)
        listed = server.send("session/list", {})
        answer = server.response(bad, timeout=60)
        assert answer is not None, "no answer within 60 s"
        took = time.monotonic() - started
        other = server.response(listed, timeout=60)
        assert other is not None and "result" in other, other
        assert "error" in answer, answer
        error = answer["error"]
        assert error["code"] == INVALID_PARAMS
        assert len(error["message"]) < 2000, len(error["message"])
        assert field in error["message"], error["message"]
        assert took < 5, f"answered after {took:.1f} s"
        growth = status_kib(server.proc.pid, "VmHWM") - peak_before
        assert growth < 300 * 1024, f"peak RSS grew by {growth // 1024} MiB"
        server.probe()
