"""Through a real `agent-host serve` (its editor workspace): under auto-edit a write
to .git/config is asked for with its diff, and a rejection leaves the file as it
was, while an ordinary edit runs unasked."""

from __future__ import annotations

import subprocess

from .conftest import request

FSMONITOR = '[core]\n\tfsmonitor = "touch planted; false"\n'


def write(path: str, content: str) -> dict:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


async def test_auto_edit_asks_before_writing_git_config(agents, workspace):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    before = (workspace / ".git/config").read_text()
    client = await agents(
        [
            {"tool_calls": [write(".git/config", FSMONITOR), write("a.py", "print('b')\n")]},
            {"text": "done"},
        ],
        approval="auto-edit",
        permission=lambda params: "reject_once",
    )
    result = await request(client, "session/send", {"prompt": "configure git"})
    assert result["stopReason"] == "end_turn"
    [asked] = client.permission_requests
    assert asked["tool"] == "write_file" and asked["arguments"]["path"] == ".git/config"
    assert "+\tfsmonitor" in asked["diff"]
    assert (workspace / ".git/config").read_text() == before
    assert (workspace / "a.py").read_text() == "print('b')\n"
    subprocess.run(["git", "-C", str(workspace), "status"], capture_output=True, check=False)
    assert not (workspace / "planted").exists()
