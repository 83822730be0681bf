"""Issue 21 item 17, and tests/server/test_hang_up.py's check on ACP: a client that
goes away -- mid-turn, or after writing requests it never read the answers to --
leaves no agent behind, and the turn it cut off is closed in the log.

Before: the SDK's stdout protocol had no ``connection_lost``, so an agent blocked
on a full stdout waited forever once its reader had gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.session import events as ev
from agent_host.session import open_store
from tests.deaf_client import __file__ as DEAF_CLIENT

from .raw import RawAgent

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

EXIT_BOUND = 10.0
"""Seconds the agent may take to notice its client is gone and shut down."""


def _ended(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status  # exited, not reaped (its parent was the client)


@pytest.mark.parametrize("mode", ["turn", "list"])
@pytest.mark.parametrize("dialect", ["acp", "serve"])
def test_an_agent_whose_client_stopped_reading_and_left_exits(tmp_path, workspace, dialect, mode):
    script = tmp_path / "script.json"
    words = " ".join(f"w{i}" for i in range(20_000))
    script.write_text(json.dumps({"steps": [{"text": words}]}))
    client = subprocess.Popen(
        [
            sys.executable,
            DEAF_CLIENT,
            dialect,
            mode,
            str(tmp_path / "store"),
            f"scripted:{script}",
            "3",
        ],
        stdout=subprocess.PIPE,
        cwd=workspace,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    agent = int(client.stdout.readline())
    try:
        assert client.wait(timeout=60) == 0
        deadline = time.monotonic() + EXIT_BOUND
        while not _ended(agent) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _ended(agent), f"the {dialect} agent ran {EXIT_BOUND} s after its client left"
    finally:  # nothing of the test outlives it, whatever failed
        client.kill()
        client.wait()
        if not _ended(agent):
            os.kill(agent, signal.SIGKILL)


async def test_hanging_up_mid_turn_closes_the_turn(tmp_path, workspace):
    script = tmp_path / "script.json"
    words = " ".join(f"w{i}" for i in range(60))
    script.write_text(json.dumps({"steps": [{"text": words, "delay_ms": 50}]}))
    agent = RawAgent(workspace, tmp_path / "store", f"scripted:{script}")
    assert "result" in agent.call("initialize", {"protocolVersion": 1}, timeout=60)
    session = agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = session["result"]["sessionId"]
    agent.send(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "talk"}]}
    )
    assert agent.wait_for(lambda m: "agent_message_chunk" in json.dumps(m), timeout=60)
    assert agent.close(timeout=EXIT_BOUND) == 0
    events = await open_store(tmp_path / "store").read(session_id)
    assert isinstance(events[-1], ev.TurnEnd), [e.type for e in events]
    assert events[-1].stop_reason == "cancelled"
