"""The engine's edit preview reaches the LSP dialect's permission request whole:
the text the tool would leave, beside the unified diff."""

from __future__ import annotations

from .conftest import request


def edit(path: str, old: str, new: str) -> dict:
    arguments = {"path": path, "old_string": old, "new_string": new}
    return {"id": "c1", "name": "edit_file", "arguments": arguments}


async def test_a_permission_request_carries_the_proposed_text(agents, workspace):
    client = await agents(
        [{"tool_calls": [edit("a.py", "'a'", "'b'")]}, {"text": "done"}],
        approval="ask",
        permission=lambda params: "reject_once",
    )
    await request(client, "session/send", {"prompt": "edit"})
    (asked,) = client.permission_requests
    assert asked["proposed"] == "print('b')\n"
    assert "-print('a')" in asked["diff"] and "+print('b')" in asked["diff"]
    assert (workspace / "a.py").read_text() == "print('a')\n"
