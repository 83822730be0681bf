"""MCP tools in real turns: a scripted model calls tools of two real servers -- the
npm reference filesystem server and the tests' own -- through AgentHost, with
approvals, cancel, restore of what a server wrote, and a server that fails."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost
from agent_host.session.mcp import McpServerStatus

from ...mcp_npm import npm_mcp  # noqa: F401  (fixture)
from .conftest import APP, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def script(tmp_path, steps) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("mine\n")
    return root.resolve()


@pytest.fixture
def servers(ws, log, npm_mcp):  # noqa: F811
    return [
        {"name": "fs", "command": npm_mcp["filesystem"], "args": [str(ws)], "env": []},
        {
            "name": "t",
            "command": sys.executable,
            "args": [APP, "stdio"],
            "env": [{"name": "MCP_TEST_LOG", "value": str(log.path)}],
        },
    ]


async def test_a_turn_calls_two_servers_and_a_restore_reverts_what_they_wrote(
    tmp_path, ws, servers
):
    steps = [
        {
            "tool_calls": [
                call("mcp__fs__write_file", path=str(ws / "made.txt"), content="by mcp\n"),
                call(
                    "mcp__fs__edit_file",
                    path=str(ws / "notes.txt"),
                    edits=[{"oldText": "mine", "newText": "theirs"}],
                ),  # fmt: skip
                call("mcp__t__echo", text="hello"),
            ]
        },
        {"text": "Wrote and echoed."},
    ]
    seen: list[object] = []

    async def on_event(session_id, item):
        seen.append(item)

    async with AgentHost(
        store="memory:", model=script(tmp_path, steps), workdir=ws, approval="auto",
        mcp_servers=servers, on_event=on_event,
    ) as host:  # fmt: skip
        result = await host.send("use the servers")
        assert result.stop_reason == "end_turn"
        assert (ws / "made.txt").read_text() == "by mcp\n"
        assert (ws / "notes.txt").read_text() == "theirs\n"
        events = await host.store.read(host.session_id)
        outputs = [e.output for e in events if type(e) is ev.ToolResult]
        assert outputs[2] == "hello" and not any(
            e.is_error for e in events if type(e) is ev.ToolResult
        )
        ready = {s.server for s in seen if isinstance(s, McpServerStatus) and s.state == "ready"}
        assert ready == {"fs", "t"}

        [checkpoint] = await host.list_checkpoints()
        assert sorted(checkpoint.files) == ["made.txt", "notes.txt"]
        assert checkpoint.external_tools == [
            "mcp__fs__write_file",
            "mcp__fs__edit_file",
            "mcp__t__echo",
        ]
        restored = await host.restore(host.session_id, checkpoint.seq)
        assert not (ws / "made.txt").exists()
        assert (ws / "notes.txt").read_text() == "mine\n"
        assert sorted(restored.restored_files) == ["made.txt", "notes.txt"]
        await host.undo_restore()
        assert (ws / "made.txt").read_text() == "by mcp\n"
        assert (ws / "notes.txt").read_text() == "theirs\n"


async def test_approvals_apply_to_mcp_tools(tmp_path, ws, servers):
    steps = [
        {"tool_calls": [call("mcp__t__echo", text="read me"), call("mcp__t__add", a=1, b=2)]},
        {"text": "done"},
    ] * 3
    asked: list[tuple[str, str]] = []

    async def permission(request):
        asked.append((request.tool, request.kind))
        return "allow_always"

    model = script(tmp_path, steps)
    # ask: every MCP tool is asked for, read-only ones too; allow_always is remembered.
    async with AgentHost(store="memory:", model=model, workdir=ws, approval="ask",
                         mcp_servers=servers, permission=permission) as host:  # fmt: skip
        await host.send("first")
        await host.send("again")
    assert asked == [("mcp__t__echo", "external_read"), ("mcp__t__add", "external")]

    # read-only: what declares readOnlyHint runs, the rest is refused without asking.
    asked.clear()
    async with AgentHost(store="memory:", model=model, workdir=ws, approval="read-only",
                         mcp_servers=servers, permission=permission) as host:  # fmt: skip
        await host.send("read only")
        results = [e for e in await host.store.read(host.session_id) if type(e) is ev.ToolResult]
    assert asked == []
    assert results[0].output == "read me" and not results[0].is_error
    assert results[1].is_error and "Permission denied" in results[1].output


async def test_cancelling_a_turn_cancels_the_mcp_call_in_flight(tmp_path, ws, servers, log):
    steps = [{"tool_calls": [call("mcp__t__slow", seconds=60)]}, {"text": "never"}]
    async with AgentHost(store="memory:", model=script(tmp_path, steps), workdir=ws,
                         approval="auto", mcp_servers=servers) as host:  # fmt: skip
        turn = asyncio.create_task(host.send("be slow"))
        await wait_until(lambda: any(line.startswith("slow start") for line in log.lines()), 30)
        assert await host.cancel()
        result = await turn
        assert result.stop_reason == "cancelled"
        # The server was told: the SDK sent notifications/cancelled for the call.
        await wait_until(lambda: any("slow cancelled" in line for line in log.lines()), 10)
        events = await host.store.read(host.session_id)
        assert [e.stop_reason for e in events if type(e) is ev.TurnEnd] == ["cancelled"]


async def test_a_server_that_cannot_start_is_reported_and_left_out(tmp_path, ws, servers):
    broken = {"name": "gone", "command": str(tmp_path / "no-such-server"), "args": [], "env": []}
    steps = [
        {"tool_calls": [call("mcp__gone__anything"), call("mcp__t__echo", text="still here")]},
        {"text": "done"},
    ]
    seen: list[McpServerStatus] = []

    async def on_event(session_id, item):
        if isinstance(item, McpServerStatus):
            seen.append(item)

    async with AgentHost(store="memory:", model=script(tmp_path, steps), workdir=ws,
                         approval="auto", mcp_servers=[broken, servers[1]],
                         on_event=on_event) as host:  # fmt: skip
        result = await host.send("try")
        assert result.stop_reason == "end_turn"
        results = [e for e in await host.store.read(host.session_id) if type(e) is ev.ToolResult]
    failed = [s for s in seen if s.state == "failed"]
    assert [s.server for s in failed] == ["gone"] and "gone" in failed[0].message
    assert results[0].is_error and "gone" in results[0].output
    assert results[1].output == "still here"


async def test_a_sessions_own_servers_replace_the_hosts(tmp_path, ws, servers):
    steps = [{"tool_calls": [call("mcp__t__echo", text="x")]}, {"text": "done"}]
    async with AgentHost(store="memory:", model=script(tmp_path, steps), workdir=ws,
                         approval="auto", mcp_servers=[servers[0]]) as host:  # fmt: skip
        await host.use_mcp_servers(host.session_id, [servers[1]])
        await host.send("echo")
        results = [e for e in await host.store.read(host.session_id) if type(e) is ev.ToolResult]
    assert results[0].output == "x" and not results[0].is_error
