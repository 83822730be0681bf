"""One odd session id (Unicode, ':', '@', '/', '.') reaches the same session from
the CLI (`agent-host run --session`, `agent-host sessions`) and the LSP wire
(`agent-host serve`), kept exactly; the one rule refuses what is no id
(session/store/ids.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata

import pytest
from pygls.exceptions import JsonRpcException

from .conftest import request, start_agent, stop_agent, write_script

ODD = "用户:123@example.com/chat.é"
INVALID_PARAMS = -32602


def cli(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_HOST")}
    return subprocess.run(
        [sys.executable, "-m", "agent_host", *args],
        capture_output=True, text=True, timeout=60, env=env, cwd=cwd,
    )  # fmt: skip


async def test_the_cli_and_the_lsp_wire_reach_one_session_by_an_odd_id(
    tmp_path, workspace, store_dir
):
    model = write_script(tmp_path / "cli.json", [{"text": "From the CLI."}] * 3)
    common = ("--store", str(store_dir), "--model", model, "--workspace", str(workspace))
    done = cli("run", "--session", ODD, *common, "First.", cwd=workspace)
    assert done.returncode == 0, done.stderr
    listed = cli("sessions", "--store", str(store_dir), "--json", cwd=workspace)
    assert [json.loads(line)["sessionId"] for line in listed.stdout.splitlines()] == [ODD]

    wire_model = write_script(tmp_path / "wire.json", [{"text": "unused"}])
    client = await start_agent(root=workspace, store=store_dir, model=wire_model)
    try:
        history = await request(client, "session/history", {"sessionId": ODD})
        assert [m["content"] for m in history["messages"]] == ["First.", "From the CLI."]
        await request(client, "session/send", {"sessionId": ODD, "prompt": "Second."})
        sessions = (await request(client, "session/list", {}))["sessions"]
        assert [s["sessionId"] for s in sessions] == [ODD]
        nfd = unicodedata.normalize("NFD", ODD)  # the same text, not the same id
        assert (await request(client, "session/history", {"sessionId": nfd}))["messages"] == []
        for bad in ("", "x" * 513, "a\x00b"):
            with pytest.raises(JsonRpcException) as caught:
                await request(client, "session/history", {"sessionId": bad})
            assert caught.value.code == INVALID_PARAMS
            assert "a session id is 1-512 characters" in caught.value.message
    finally:
        await stop_agent(client)

    shown = cli("history", ODD, "--store", str(store_dir), cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    # (The session keeps the model it was started with: the CLI's script answers.)
    assert shown.stdout.splitlines() == [
        "user: First.", "assistant: From the CLI.", "user: Second.", "assistant: From the CLI."
    ]  # fmt: skip


PATH_LIKE = ["../x", "../../etc/passwd", "a/b", "..", ".", "/abs", "\\x", "a b", "CON", "A", "a"]


async def test_path_like_ids_are_sessions_kept_inside_the_store(agents, tmp_path, store_dir):
    client = await agents([{"text": "ok"}] * len(PATH_LIKE))
    for session_id in PATH_LIKE:
        done = await request(client, "session/send", {"sessionId": session_id, "prompt": "hi"})
        assert done["sessionId"] == session_id
    sessions = (await request(client, "session/list", {}))["sessions"]
    assert sorted(s["sessionId"] for s in sessions) == sorted(PATH_LIKE)
    for session_id in PATH_LIKE:
        history = await request(client, "session/history", {"sessionId": session_id})
        assert [m["content"] for m in history["messages"]] == ["hi", "ok"]
    # Nothing was written next to (or above) the store, nor in the workspace.
    assert {p.name for p in tmp_path.iterdir()} <= {"ws", "store", "script-0.json"}
    assert [p.name for p in (tmp_path / "ws").iterdir()] == ["a.py"]
    assert not (store_dir.parent.parent / "etc").exists()
