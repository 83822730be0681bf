"""An odd session id (Unicode, ':', '@', '/', '.') made by the CLI is the same
session over ACP (`agent-host acp`): load replays it, a prompt continues it, list
gives the id back exactly, and fork and delete work on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import acp
import pytest

from .conftest import say

ODD = "用户:123@example.com/chat.é"


async def test_a_session_the_cli_made_under_an_odd_id_loads_over_acp(spawn, workspace, tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "From the CLI."}] * 3}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_HOST")}
    done = subprocess.run(
        [sys.executable, "-m", "agent_host", "run", "--session", ODD,
         "--store", str(tmp_path / "store"), "--model", f"scripted:{script}",
         "--workspace", str(workspace), "First."],
        capture_output=True, text=True, timeout=60, env=env, cwd=workspace,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    async with spawn() as (conn, client):  # the same store and script
        await conn.load_session(cwd=str(workspace), session_id=ODD, mcp_servers=[])
        assert client.text(ODD) == "From the CLI."
        await say(conn, ODD, "Second.")
        listed = await conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [ODD]
        forked = await conn.fork_session(session_id=ODD, cwd=str(workspace), mcp_servers=[])
        assert forked.session_id != ODD
        ids = {s.session_id for s in (await conn.list_sessions(cwd=str(workspace))).sessions}
        assert ids == {ODD, forked.session_id}
        with pytest.raises(acp.RequestError) as caught:
            await conn.load_session(cwd=str(workspace), session_id="x" * 513, mcp_servers=[])
        assert caught.value.code == -32602
        assert "a session id is 1-512 characters" in str(caught.value.data or caught.value)
        await conn.ext_method("agent-host/delete", {"sessionId": ODD})
        ids = {s.session_id for s in (await conn.list_sessions(cwd=str(workspace))).sessions}
        assert ids == {forked.session_id}
