"""A client that hangs up mid-turn -- with or without a shutdown first, as Neovim does
on quit -- still leaves the turn closed in the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agent_host.session import events as ev
from agent_host.session import open_store


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.mark.parametrize("shutdown_first", [True, False], ids=["shutdown-then-eof", "eof"])
@pytest.mark.parametrize("attempt", range(3))
async def test_hanging_up_mid_turn_closes_the_turn(tmp_path, shutdown_first, attempt):
    (tmp_path / "ws").mkdir()
    script = tmp_path / "script.json"
    words = " ".join(f"w{i}" for i in range(60))
    script.write_text(json.dumps({"steps": [{"text": words, "delay_ms": 50}]}))
    server = subprocess.Popen(
        [sys.executable, "-m", "agent_host", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    options = {"store": str(tmp_path / "store"), "model": f"scripted:{script}", "approval": "auto"}
    server.stdin.write(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "capabilities": {},
                    "rootUri": (tmp_path / "ws").as_uri(),
                    "initializationOptions": options,
                },
            }
        )
        + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/send",
                "params": {"sessionId": "s1", "prompt": "talk"},
            }
        )
    )
    server.stdin.flush()
    seen = b""
    while b"text_delta" not in seen:
        chunk = os.read(server.stdout.fileno(), 65536)
        assert chunk, "the server ended before streaming"
        seen += chunk
    if shutdown_first:
        server.stdin.write(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    server.stdin.close()
    assert server.wait(timeout=30) == 0
    events = await open_store(tmp_path / "store").read("s1")
    assert isinstance(events[-1], ev.TurnEnd), [e.type for e in events]
    assert events[-1].stop_reason == "cancelled"
