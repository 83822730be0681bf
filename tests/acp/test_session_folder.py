"""Over ACP: a session's turns run in the folder it was started in; loaded with
another folder as its cwd, a prompt is refused, naming the folder to open."""

from __future__ import annotations

import acp
import pytest

from .conftest import new_session, say

WORKSPACE_MISMATCH = -31004
STEPS = [
    {"text": "hello"},
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "n\n"}}]},
    {"text": "done"},
]


async def test_a_prompt_in_another_folder_is_refused_and_names_the_sessions(
    spawn, workspace, tmp_path
):
    other = tmp_path / "other"
    other.mkdir()
    async with spawn(STEPS, "--approval", "auto") as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "start here")

    async with spawn() as (conn, _):
        await conn.load_session(cwd=str(other), session_id=sid, mcp_servers=[])
        with pytest.raises(acp.RequestError) as refused:
            await say(conn, sid, "write new.txt")
        assert refused.value.code == WORKSPACE_MISMATCH
        assert f"Open {workspace.resolve()}" in str(refused.value)
        assert list(other.iterdir()) == [] and not (workspace / "new.txt").exists()

        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        await say(conn, sid, "write new.txt")
    assert (workspace / "new.txt").read_text() == "n\n" and list(other.iterdir()) == []
