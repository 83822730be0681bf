"""MCP servers through the LSP server: initializationOptions.mcpServers and
session/new's own, permission requests of kind external, mcp_server events, and
checkpoints that name the MCP tools a turn called. Real servers: the npm
filesystem server and the tests' own (tests/session/mcp/server_app.py)."""

from __future__ import annotations

import sys

import pytest
from pygls.exceptions import JsonRpcException

from ..mcp_npm import npm_mcp  # noqa: F401  (fixture)
from ..session.mcp.conftest import APP
from .conftest import request, start_agent, stop_agent, write_script

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SECRET = "tok-3f9a1c77e2"


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def own_server(name="t", mode="stdio"):
    return {
        "name": name,
        "command": sys.executable,
        "args": [APP, mode],
        "env": [{"name": "TOKEN", "value": SECRET}],
    }


async def test_a_turn_uses_mcp_tools_asks_for_them_and_restores_their_writes(
    tmp_path,
    workspace,
    npm_mcp,  # noqa: F811
):
    target = workspace.resolve() / "made.txt"
    steps = [
        {
            "tool_calls": [
                call("mcp__fs__write_file", path=str(target), content="x\n"),
                call("mcp__t__echo", text="hi"),
            ]
        },  # fmt: skip
        {"text": "done"},
    ]
    servers = [
        {"name": "fs", "command": npm_mcp["filesystem"], "args": [str(workspace.resolve())]},
        own_server(),
    ]
    client = await start_agent(
        root=workspace,
        store=tmp_path / "store",
        model=write_script(tmp_path / "s.json", steps),
        approval="ask",
        options={"mcpServers": servers},
    )
    try:
        sent = await request(client, "session/send", {"prompt": "write it"}, timeout=60)
        assert sent["stopReason"] == "end_turn"
        asked = [(p["tool"], p["kind"]) for p in client.permission_requests]
        assert asked == [("mcp__fs__write_file", "external"), ("mcp__t__echo", "external")]
        assert target.read_text() == "x\n"
        states = {
            (e["data"]["server"], e["data"]["state"])
            for e in client.events
            if e["kind"] == "mcp_server"
        }
        assert states == {("fs", "ready"), ("t", "ready")}
        sid = sent["sessionId"]
        [checkpoint] = (await request(client, "session/checkpoints", {"sessionId": sid}))[
            "checkpoints"
        ]
        assert checkpoint["externalTools"] == ["mcp__fs__write_file", "mcp__t__echo"]
        assert checkpoint["files"] == ["made.txt"]
        await request(client, "session/restore", {"sessionId": sid, "seq": checkpoint["seq"]})
        assert not target.exists()
    finally:
        await stop_agent(client)


async def test_session_new_gives_a_session_its_own_servers(tmp_path, workspace):
    steps = [{"tool_calls": [call("mcp__mine__echo", text="own")]}, {"text": "done"}]
    client = await start_agent(
        root=workspace, store=tmp_path / "store", model=write_script(tmp_path / "s.json", steps)
    )
    try:
        with pytest.raises(JsonRpcException) as bad:
            await request(client, "session/new", {"mcpServers": [{"name": "x", "args": [1]}]})
        assert bad.value.code == -32602
        assert "mcpServers[0]" in bad.value.message
        assert (await request(client, "session/list", {}))["sessions"] == []  # nothing made

        sid = (await request(client, "session/new", {"mcpServers": [own_server("mine")]}))[
            "sessionId"
        ]
        sent = await request(client, "session/send", {"sessionId": sid, "prompt": "echo"})
        assert sent["stopReason"] == "end_turn"
        history = await request(client, "session/history", {"sessionId": sid})
        tool = [m for m in history["messages"] if m["role"] == "tool"]
        assert tool[0]["content"] == "own"
    finally:
        await stop_agent(client)


async def test_a_failing_server_is_reported_by_name_and_never_shows_its_secrets(
    tmp_path, workspace
):
    steps = [{"tool_calls": [call("mcp__bad__echo", text="x")]}, {"text": "carried on"}]
    client = await start_agent(
        root=workspace,
        store=tmp_path / "store",
        model=write_script(tmp_path / "s.json", steps),
        options={"mcpServers": [own_server("bad", mode="exit")]},
    )
    try:
        sent = await request(client, "session/send", {"prompt": "try"}, timeout=60)
        assert sent["stopReason"] == "end_turn" and sent["text"] == "carried on"
        [failed] = [e["data"] for e in client.events if e["kind"] == "mcp_server"]
        assert failed["server"] == "bad" and failed["state"] == "failed"
        assert "bad" in failed["message"]
        everything = repr(client.events) + repr(
            await request(client, "session/history", {"sessionId": sent["sessionId"]})
        )
        assert SECRET not in everything
    finally:
        await stop_agent(client)
