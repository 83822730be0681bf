"""Issue 23 finding 5 over ACP: session/new stores nothing. CodeCompanion opens one
or two sessions per chat and ``acpx exec`` one per run; each used to stay in every
picker as an untitled id. A session is stored from its first change and listed from
its first prompt; until then this process holds it (load, fork, delete work), and
after a restart it is unknown, which the error says."""

from __future__ import annotations

import acp

from .conftest import new_session, say

STEPS = [{"text": "Hello."}]


async def test_an_unprompted_session_is_listed_nowhere_and_loads_in_its_process(
    spawn, workspace, tmp_path
):
    async with spawn(STEPS) as (conn, _):
        prompted = await new_session(conn, workspace)
        await say(conn, prompted, "hi")
        unprompted = await new_session(conn, workspace)
        here = await conn.list_sessions(cwd=str(workspace))
        everywhere = await conn.list_sessions()
        # held by this process: it loads, and a fork of it copies its nothing
        await conn.load_session(cwd=str(workspace), session_id=unprompted, mcp_servers=[])
        forked = await conn.fork_session(session_id=unprompted, cwd=str(workspace), mcp_servers=[])
        after_fork = await conn.list_sessions()
        # deleting it only lets go of it: nothing was stored
        dropped = await new_session(conn, workspace)
        await conn.ext_method("agent-host/delete", {"sessionId": dropped})
        try:
            await conn.load_session(cwd=str(workspace), session_id=dropped, mcp_servers=[])
            raise AssertionError("a deleted session loaded")
        except acp.RequestError as exc:
            assert exc.code == -32002
    assert [s.session_id for s in here.sessions] == [prompted]
    assert [s.session_id for s in everywhere.sessions] == [prompted]
    assert [s.session_id for s in after_fork.sessions] == [prompted], forked.session_id
    stored = (tmp_path / "store").rglob(f"*{unprompted}*")
    assert [f for f in stored if f.parent.name != "locks"] == []  # (its lease's lock file)

    async with spawn() as (conn, _):  # a new process over the same store
        try:
            await conn.load_session(cwd=str(workspace), session_id=unprompted, mcp_servers=[])
            raise AssertionError("an unprompted session outlived its agent")
        except acp.RequestError as exc:
            gone = exc
        listed = await conn.list_sessions()
    assert gone.code == -32002
    assert "never prompted" in str(gone), str(gone)
    assert [s.session_id for s in listed.sessions] == [prompted]
