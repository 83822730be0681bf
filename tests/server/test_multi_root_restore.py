"""A session's files go back to the folder it was started in, whatever folders the
server restoring them has open and in whatever order; a server without that
folder, or a log that does not say which folder it was, writes nothing."""

from __future__ import annotations

import attrs
import pytest
from pygls.exceptions import JsonRpcException

from agent_host.session import events as ev
from agent_host.session.store import open_store

from .conftest import request

WORKSPACE_MISMATCH = -32004


def tree(root) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def folders(tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    (a / "old.txt").write_text("A's old\n")
    (a / "x.txt").write_text("A's x\n")
    (b / "x.txt").write_text("B's x\n")
    return a, b


TURN = [
    {
        "tool_calls": [
            {"name": "delete_file", "arguments": {"path": "old.txt"}},
            {"name": "write_file", "arguments": {"path": "x.txt", "content": "A's x, v2\n"}},
        ]
    },
    {"text": "done"},
]


async def session_in_a(agents, a) -> tuple[str, int]:
    """A session started in A whose one turn deleted A/old.txt and rewrote A/x.txt."""
    client = await agents(TURN, root=a)
    sent = await request(client, "session/send", {"prompt": "change A"})
    assert tree(a) == {"x.txt": "A's x, v2\n"}
    return sent["sessionId"], sent["checkpoint"]


@pytest.mark.parametrize("order", ["B,A", "A,B"])
@pytest.mark.parametrize("force", [False, True])
async def test_a_restore_writes_into_the_sessions_own_folder(agents, folders, order, force):
    a, b = folders
    session, checkpoint = await session_in_a(agents, a)
    opened = [b, a] if order == "B,A" else [a, b]
    client = await agents([{"text": "-"}], root=opened[0], folders=opened)
    params = {"sessionId": session, "seq": checkpoint, "force": force}
    done = await request(client, "session/restore", params)
    assert sorted(done["restoredFiles"]) == ["old.txt", "x.txt"] and done["conflicts"] == []
    assert tree(a) == {"old.txt": "A's old\n", "x.txt": "A's x\n"}
    assert tree(b) == {"x.txt": "B's x\n"}
    await request(client, "session/undoRestore", {"sessionId": session})
    assert tree(a) == {"x.txt": "A's x, v2\n"}
    assert tree(b) == {"x.txt": "B's x\n"}


@pytest.mark.parametrize("force", [False, True])
async def test_a_server_without_the_sessions_folder_refuses_and_names_it(agents, folders, force):
    a, b = folders
    session, checkpoint = await session_in_a(agents, a)
    client = await agents([{"text": "-"}], root=b, folders=[b])
    params = {"sessionId": session, "seq": checkpoint, "force": force}
    with pytest.raises(JsonRpcException) as refused:
        await request(client, "session/restore", params)
    assert refused.value.code == WORKSPACE_MISMATCH
    assert f"Open {a}" in refused.value.message
    assert tree(a) == {"x.txt": "A's x, v2\n"} and tree(b) == {"x.txt": "B's x\n"}
    # The conversation alone is no file of any folder's.
    alone = await request(client, "session/restore", {**params, "files": False})
    assert alone["restoredFiles"] == []


@pytest.mark.parametrize("opened", ["A", "B,A"])
async def test_a_log_without_session_started_restores_no_files(agents, folders, store_dir, opened):
    """An older or tampered log: where its relative paths belong is unknown."""
    a, b = folders
    session, checkpoint = await session_in_a(agents, a)
    store = open_store(store_dir)
    try:
        logged = await store.read(session)
        assert type(logged[0]) is ev.SessionStarted
        headless = [attrs.evolve(e, seq=0, ts=0.0) for e in logged[1:]]
        await store.append("no-start", headless, expected_head=0)
    finally:
        await store.close()
    roots = [a] if opened == "A" else [b, a]
    client = await agents([{"text": "-"}], root=roots[0], folders=roots)
    seq = checkpoint - 1  # the same prompt, one event earlier in the copy
    with pytest.raises(JsonRpcException) as refused:
        await request(
            client, "session/restore", {"sessionId": "no-start", "seq": seq, "force": True}
        )
    assert refused.value.code == WORKSPACE_MISMATCH
    assert "does not say which folder" in refused.value.message
    assert tree(a) == {"x.txt": "A's x, v2\n"} and tree(b) == {"x.txt": "B's x\n"}
