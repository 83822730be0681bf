"""Over the wire: a turn's shell commands show in its checkpoint, their changes are
restored and undone, what was not captured is said, and the user's edit is kept
until the restore is forced."""

from __future__ import annotations

from .conftest import request


def command(text: str) -> dict:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": text}}]}


async def test_a_commands_changes_are_restored_over_the_wire(agents, workspace):
    (workspace / "b.txt").write_text("bee\n")
    (workspace / "node_modules").mkdir()
    steps = [
        command(
            "sed -i 's/a/A/' a.py && rm b.txt && echo new > c.txt && echo x > node_modules/d.js"
        ),
        {"text": "done"},
    ]
    client = await agents(steps, approval="auto")
    sent = await request(client, "session/send", {"prompt": "use the shell"})
    (checkpoint,) = (
        await request(client, "session/checkpoints", {"sessionId": sent["sessionId"]})
    )["checkpoints"]
    assert sorted(checkpoint["files"]) == ["a.py", "b.txt", "c.txt"]
    assert sorted(checkpoint["fromCommands"]) == ["a.py", "b.txt", "c.txt"]
    assert checkpoint["notCaptured"] == ["node_modules/"]

    (workspace / "c.txt").write_text("the user's c\n")
    params = {"sessionId": sent["sessionId"], "seq": sent["checkpoint"]}
    kept = await request(client, "session/restore", params)
    assert kept["conflicts"] == ["c.txt"] and kept["notCaptured"] == ["node_modules/"]
    assert (workspace / "a.py").read_text() == "print('a')\n"
    assert (workspace / "b.txt").read_text() == "bee\n"
    assert (workspace / "c.txt").read_text() == "the user's c\n"

    await request(client, "session/undoRestore", {"sessionId": sent["sessionId"]})
    assert (workspace / "a.py").read_text() == "print('A')\n" and not (workspace / "b.txt").exists()
    forced = await request(client, "session/restore", {**params, "force": True})
    assert forced["conflicts"] == [] and "c.txt" in forced["restoredFiles"]
    assert not (workspace / "c.txt").exists()
