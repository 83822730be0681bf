"""Over the LSP dialect: a turn's changes as per-file diffs (session/changes), a
restore's preview (session/restore with dryRun) that the restore then follows, a
restore limited to chosen paths, and one turn's file reverted (session/revertFiles),
undoable; the errors each names."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from .conftest import request

STEPS = [
    {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "new.txt", "content": "fresh\n"}},
            {
                "name": "run_command",
                "arguments": {"command": "sed -i 's/a/A/' a.py && printf 'x\\0y' > blob.bin"},
            },
        ]
    },
    {"text": "done"},
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b\n"}}]},
    {"text": "and b"},
]


async def turns(agents):
    client = await agents(STEPS, approval="auto")
    first = await request(client, "session/send", {"prompt": "add a test"})
    sid = first["sessionId"]
    second = await request(client, "session/send", {"sessionId": sid, "prompt": "and b"})
    return client, sid, first["checkpoint"], second["checkpoint"]


async def test_a_turns_changes_are_per_file_diffs(agents, workspace):
    client, sid, first, second = await turns(agents)
    found = await request(client, "session/changes", {"sessionId": sid, "seq": first})
    files = {f["path"]: f for f in found["files"]}
    assert set(files) == {"new.txt", "a.py", "blob.bin"}
    assert files["new.txt"] == {
        "path": "new.txt",
        "action": "added",
        "binary": False,
        "diff": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n",
        "added": 1,
        "removed": 0,
        "before": None,
        "after": "fresh\n",
        "source": "edit",
        "oldPath": None,
    }
    a = files["a.py"]
    assert (a["action"], a["source"], a["added"], a["removed"]) == ("modified", "command", 1, 1)
    assert "-print('a')\n+print('A')\n" in a["diff"]
    assert files["blob.bin"]["binary"] and files["blob.bin"]["diff"] == ""
    last = await request(client, "session/changes", {"sessionId": sid})
    assert [f["path"] for f in last["files"]] == ["b.txt"]
    whole = await request(client, "session/changes", {"sessionId": sid, "fromSeq": first})
    assert {f["path"] for f in whole["files"]} == {"new.txt", "a.py", "blob.bin", "b.txt"}
    (cp1, cp2) = (await request(client, "session/checkpoints", {"sessionId": sid}))["checkpoints"]
    assert (cp1["ordinal"], cp1["label"]) == (1, "1 · add a test")
    assert (cp2["ordinal"], cp2["label"]) == (2, "2 · and b")

    with pytest.raises(JsonRpcException) as missing:
        await request(client, "session/changes", {"sessionId": sid, "seq": 999})
    assert missing.value.code == -32003
    with pytest.raises(JsonRpcException) as both:
        await request(client, "session/changes", {"sessionId": sid, "seq": first, "fromSeq": 1})
    assert both.value.code == -32602 and "seq" in str(both.value)


async def test_a_preview_then_the_restore_writes_what_it_said(agents, workspace):
    client, sid, first, _ = await turns(agents)
    (workspace / "new.txt").write_text("the user's\n")
    params = {"sessionId": sid, "seq": first}
    before = {p.name: p.read_bytes() for p in workspace.iterdir()}
    dry = await request(client, "session/restore", {**params, "dryRun": True})
    assert {p.name: p.read_bytes() for p in workspace.iterdir()} == before
    preview = dry["preview"]
    assert dry["restoredFiles"] == [] and preview["messagesRemoved"] == 4
    assert preview["checkpoint"]["label"] == "1 · add a test"
    files = {f["path"]: f for f in preview["files"]}
    assert set(files) == {"new.txt", "a.py", "blob.bin", "b.txt"}
    conflict = files["new.txt"]
    assert conflict["conflict"] and conflict["action"] == "deleted"
    assert conflict["before"] == "the user's\n" and conflict["agentText"] == "fresh\n"
    assert "-fresh\n+the user's\n" in conflict["userDiff"]
    assert not files["a.py"]["conflict"] and files["a.py"]["after"] == "print('a')\n"

    done = await request(client, "session/restore", params)
    assert done["conflicts"] == ["new.txt"] and done["messagesRemoved"] == 4
    assert sorted(done["restoredFiles"]) == ["a.py", "b.txt", "blob.bin"]
    assert (workspace / "a.py").read_text() == files["a.py"]["after"]
    assert not (workspace / "b.txt").exists()
    assert (workspace / "new.txt").read_text() == "the user's\n"
    assert done["preview"] is None


async def test_a_restore_of_chosen_paths_leaves_the_others(agents, workspace):
    client, sid, first, _ = await turns(agents)
    params = {"sessionId": sid, "seq": first, "paths": ["a.py"]}
    with pytest.raises(JsonRpcException) as unknown:
        await request(client, "session/restore", {**params, "paths": ["nope.txt"]})
    assert unknown.value.code == -32602 and "nope.txt" in str(unknown.value)
    dry = await request(client, "session/restore", {**params, "dryRun": True})
    assert [f["path"] for f in dry["preview"]["files"]] == ["a.py"]
    done = await request(client, "session/restore", params)
    assert done["restoredFiles"] == ["a.py"] and done["removedEvents"] > 0
    assert (workspace / "a.py").read_text() == "print('a')\n"
    assert (workspace / "new.txt").read_text() == "fresh\n"
    assert (workspace / "b.txt").read_text() == "b\n"
    assert (await request(client, "session/checkpoints", {"sessionId": sid}))["checkpoints"] == []


async def test_reverting_one_file_of_a_turn_keeps_the_rest_and_is_undoable(agents, workspace):
    client, sid, first, _ = await turns(agents)
    params = {"sessionId": sid, "seq": first, "paths": ["new.txt"]}
    dry = await request(client, "session/revertFiles", {**params, "dryRun": True})
    (shown,) = dry["preview"]["files"]
    assert (shown["path"], shown["action"], shown["conflict"]) == ("new.txt", "deleted", False)
    assert (workspace / "new.txt").exists()
    done = await request(client, "session/revertFiles", params)
    assert done["restoredFiles"] == ["new.txt"] and done["removedEvents"] == 0
    assert not (workspace / "new.txt").exists()
    assert (workspace / "a.py").read_text() == "print('A')\n"  # the turn's other file
    checkpoints = (await request(client, "session/checkpoints", {"sessionId": sid}))["checkpoints"]
    assert len(checkpoints) == 2  # the conversation kept
    await request(client, "session/undoRestore", {"sessionId": sid})
    assert (workspace / "new.txt").read_text() == "fresh\n"

    (workspace / "new.txt").write_text("the user's\n")
    kept = await request(client, "session/revertFiles", params)
    assert kept["conflicts"] == ["new.txt"] and kept["restoredFiles"] == []
    assert (workspace / "new.txt").read_text() == "the user's\n"
    forced = await request(client, "session/revertFiles", {**params, "force": True})
    assert forced["restoredFiles"] == ["new.txt"] and not (workspace / "new.txt").exists()
