"""Over ACP (its client workspace): under auto-edit an edit of .git/config is asked
for, and a rejection leaves the file; an ordinary edit is not asked for."""

from __future__ import annotations

import subprocess

from .conftest import new_session, say

FSMONITOR = '[core]\n\tfsmonitor = "touch planted; false"\n'


async def test_auto_edit_asks_before_editing_git_config(spawn, workspace):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    before = (workspace / ".git/config").read_text()
    calls = [
        {
            "name": "edit_file",
            "arguments": {"path": ".git/config", "old_string": "[core]\n", "new_string": FSMONITOR},
        },
        {"name": "write_file", "arguments": {"path": "a.py", "content": "print('b')\n"}},
    ]
    async with spawn([{"tool_calls": calls}, {"text": "done"}], "--approval", "auto-edit") as (
        conn,
        client,
    ):
        client.answer = "reject_once"
        sid = await new_session(conn, workspace)
        result = await say(conn, sid, "configure git")
    assert result.stop_reason == "end_turn"
    [asked] = client.permissions
    assert asked.kind == "edit" and ".git/config" in (asked.title or "")
    assert (workspace / ".git/config").read_text() == before
    assert (workspace / "a.py").read_text() == "print('b')\n"
