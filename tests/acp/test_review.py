"""Review over ACP: ``/rewind N --preview`` shows the diffs (a tool call's diff
content, conflicts named) and writes nothing; ``/rewind N --only`` rewinds chosen
files; the ``_agent-host/changes``, ``restorePreview`` and ``revertFiles`` extension
methods answer the LSP dialect's JSON."""

from __future__ import annotations

import acp
import pytest

from .conftest import new_session, say


def write(path: str, content: str) -> dict:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


STEPS = [
    {"tool_calls": [write("a.py", "v1\n"), write("b.txt", "b\n")]},
    {"text": "Wrote v1 and b."},
    {"tool_calls": [write("a.py", "v2\n")]},
    {"text": "Wrote v2."},
]


async def two_turns(conn, workspace) -> tuple[str, int, int]:
    sid = await new_session(conn, workspace)
    await say(conn, sid, "write v1")
    await say(conn, sid, "write v2")
    listed = await conn.ext_method("agent-host/checkpoints", {"sessionId": sid})
    first, second = (c["seq"] for c in listed["checkpoints"])
    return sid, first, second


def disk(workspace) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(workspace.iterdir()) if p.is_file()}


async def test_rewind_preview_shows_diffs_and_names_conflicts_writing_nothing(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, client):
        sid, first, _ = await two_turns(conn, workspace)
        (workspace / "b.txt").write_text("the user's b\n")
        before = disk(workspace)
        client.updates.clear()
        await say(conn, sid, f"/rewind {first} --preview")
        text = client.text(sid)
        (shown,) = client.of("tool_call", sid)
        after = disk(workspace)
        checkpoints = await conn.ext_method("agent-host/checkpoints", {"sessionId": sid})

    assert after == before
    assert len(checkpoints["checkpoints"]) == 2  # the conversation too
    assert shown.title == "Preview: rewind to just before 1 · write v1"
    diffs = {b.path: b for b in shown.content if b.type == "diff"}
    assert set(diffs) == {str(workspace / "a.py"), str(workspace / "b.txt")}
    a = diffs[str(workspace / "a.py")]
    assert (a.old_text, a.new_text) == ("v2\n", "print('a')\n")
    b = diffs[str(workspace / "b.txt")]
    assert (b.old_text, b.new_text) == ("the user's b\n", "")
    assert "b.txt (deleted): you changed it since the agent did" in text
    assert "remove 4 messages" in text and "Nothing was changed yet" in text
    assert text.endswith(f"/rewind {first} --force)")


async def test_rewind_only_chosen_files(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, client):
        sid, first, _ = await two_turns(conn, workspace)
        client.updates.clear()
        await say(conn, sid, f"/rewind {first} --only a.py")
        text = client.text(sid)
        after = disk(workspace)
        client.updates.clear()
        await say(conn, sid, "/rewind 1 --only")
        bad = client.text(sid)

    assert after == {"a.py": "print('a')\n", "b.txt": "b\n"}
    assert "restored 1 file (a.py); 4 messages removed." in text
    assert bad.startswith("--only needs the files")


async def test_extension_methods_for_changes_preview_and_revert(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, _):
        sid, first, second = await two_turns(conn, workspace)
        changes = await conn.ext_method("agent-host/changes", {"sessionId": sid, "seq": first})
        last = await conn.ext_method("agent-host/changes", {"sessionId": sid})
        ranged = await conn.ext_method(
            "agent-host/changes", {"sessionId": sid, "fromSeq": first, "toSeq": second}
        )
        preview = await conn.ext_method(
            "agent-host/restorePreview", {"sessionId": sid, "seq": second, "paths": ["a.py"]}
        )
        untouched = disk(workspace)
        reverted = await conn.ext_method(
            "agent-host/revertFiles", {"sessionId": sid, "seq": first, "paths": ["b.txt"]}
        )
        after_revert = disk(workspace)
        await conn.ext_method("agent-host/undoRestore", {"sessionId": sid})
        after_undo = disk(workspace)
        with pytest.raises(acp.RequestError) as unknown:
            await conn.ext_method(
                "agent-host/revertFiles", {"sessionId": sid, "seq": first, "paths": ["x.py"]}
            )
        with pytest.raises(acp.RequestError) as no_checkpoint:
            await conn.ext_method("agent-host/changes", {"sessionId": sid, "seq": 999})

    files = {f["path"]: f for f in changes["files"]}
    assert files["b.txt"] == {
        "path": "b.txt",
        "action": "added",
        "binary": False,
        "diff": "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n",
        "added": 1,
        "removed": 0,
        "before": None,
        "after": "b\n",
        "source": "edit",
        "oldPath": None,
    }
    assert files["a.py"]["before"] == "print('a')\n" and files["a.py"]["after"] == "v1\n"
    assert [f["path"] for f in last["files"]] == ["a.py"] and last["files"][0]["after"] == "v2\n"
    assert ranged == changes
    (a,) = preview["files"]
    assert (a["path"], a["before"], a["after"], a["conflict"]) == ("a.py", "v2\n", "v1\n", False)
    assert preview["messagesRemoved"] == 2 and preview["checkpoint"]["ordinal"] == 2
    assert untouched["a.py"] == "v2\n"
    assert reverted["restoredFiles"] == ["b.txt"] and reverted["removedEvents"] == 0
    assert after_revert == {"a.py": "v2\n"}
    assert after_undo == {"a.py": "v2\n", "b.txt": "b\n"}
    assert unknown.value.code == -32602 and "x.py" in str(unknown.value)
    assert no_checkpoint.value.code != -32602
