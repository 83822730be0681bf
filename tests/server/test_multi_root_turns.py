"""A session's turns work in the folder it was started in, whatever folders the
server continuing it has open and in whatever order: its tools, its commands and
what they log are that folder's, and a server without that folder runs nothing."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from agent_host.session import events as ev
from agent_host.session.store import open_store

from .conftest import request
from .test_multi_root_restore import WORKSPACE_MISMATCH, tree

A_FILES = {"a.txt": "A's a\n", "e.txt": "A's e\n"}
B_FILES = {"a.txt": "B's a\n", "e.txt": "B's e\n", "b-only.txt": "B alone\n"}

LOOK_AND_CHANGE = [
    {
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "a.txt"}},
            {"name": "list_files", "arguments": {"pattern": "*.txt"}},
            {"name": "grep", "arguments": {"pattern": "'s e"}},
        ]
    },
    {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "a.txt", "content": "a, v2\n"}},
            {
                "name": "edit_file",
                "arguments": {"path": "e.txt", "old_string": "A's e", "new_string": "e, v2"},
            },
            {"name": "run_command", "arguments": {"command": "pwd > made.txt"}},
        ]
    },
    {"text": "done"},
]
SESSION_SCRIPT = [{"text": "hello"}, *LOOK_AND_CHANGE]
"""Step 0: the turn in A's server; then the turn continued in B's and A's."""


@pytest.fixture
def folders(tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    for folder, files in ((a, A_FILES), (b, B_FILES)):
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
    return a, b


async def logged(store_dir, session: str) -> list[ev.Event]:
    store = open_store(store_dir)
    try:
        return await store.read(session)
    finally:
        await store.close()


@pytest.mark.parametrize("restore_order", ["B,A", "A,B"])
@pytest.mark.parametrize("editor", [False, True], ids=["disk", "editor"])
async def test_a_turn_continued_in_a_server_opened_b_first_works_in_a(
    agents, folders, store_dir, restore_order, editor
):
    a, b = folders
    # The session keeps the model (the script) it was started with, in any server.
    first = await agents(SESSION_SCRIPT, root=a, folders=[a], apply_edit=editor)
    session = (await request(first, "session/send", {"prompt": "start in A"}))["sessionId"]

    b_first = await agents([], root=b, folders=[b, a], apply_edit=editor)
    sent = await request(b_first, "session/send", {"sessionId": session, "prompt": "change"})
    assert tree(a) == {"a.txt": "a, v2\n", "e.txt": "e, v2\n", "made.txt": f"{a}\n"}
    assert tree(b) == B_FILES

    events = await logged(store_dir, session)
    turn = [e for e in events if e.seq > sent["checkpoint"]]
    outputs = [e.output for e in turn if type(e) is ev.ToolResult]
    assert "A's a" in outputs[0] and "B's" not in outputs[0]
    # list_files and grep see both roots: A's files by A-relative paths, B's by
    # their absolute ones.
    listed = outputs[1].split()
    assert {"a.txt", "e.txt", str(b / "a.txt"), str(b / "b-only.txt")} <= set(listed)
    assert sorted(outputs[2].splitlines()) == sorted([f"{b}/e.txt:1:B's e", "e.txt:1:A's e"])
    changed = sorted(e.path for e in turn if type(e) is ev.FileSnapshot)
    assert changed == ["a.txt", "e.txt", "made.txt"]

    opened = [b, a] if restore_order == "B,A" else [a, b]
    restorer = await agents([{"text": "-"}], root=opened[0], folders=opened, apply_edit=editor)
    params = {"sessionId": session, "seq": sent["checkpoint"]}
    done = await request(restorer, "session/restore", params)
    assert sorted(done["restoredFiles"]) == ["a.txt", "e.txt", "made.txt"]
    assert done["conflicts"] == [] and done["notCaptured"] == []
    assert tree(a) == A_FILES
    assert tree(b) == B_FILES


async def test_a_send_in_a_server_without_the_sessions_folder_is_refused(
    agents, folders, store_dir
):
    a, b = folders
    first = await agents(SESSION_SCRIPT, root=a, folders=[a])
    session = (await request(first, "session/send", {"prompt": "start in A"}))["sessionId"]
    before = await logged(store_dir, session)

    elsewhere = await agents([], root=b, folders=[b])
    with pytest.raises(JsonRpcException) as refused:
        await request(elsewhere, "session/send", {"sessionId": session, "prompt": "change"})
    assert refused.value.code == WORKSPACE_MISMATCH
    assert f"Open {a}" in refused.value.message
    assert tree(a) == A_FILES and tree(b) == B_FILES
    assert await logged(store_dir, session) == before
