"""MCP calls and servers that would hold a turn (or outlive the host) for ever:
a call never answered, a server that exits while a process it started holds its
stdout, a server that hangs on initialize, and a host killed by SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.session.host import AgentHost
from agent_host.session.mcp import McpServerConfig, McpServers, parse_config_file
from agent_host.session.workspace.processes import read_proc

from .conftest import APP, Log, Reports, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def ended(pid: int) -> bool:
    """Gone, or a zombie whose new parent has not reaped it yet."""
    proc = read_proc(pid)
    return proc is None or proc.zombie


def children(log: Log) -> list[int]:
    return [int(line.split()[1]) for line in log.lines() if line.startswith("child ")]


def test_the_config_file_bounds_a_servers_tool_calls() -> None:
    base = {"command": "srv"}
    [claude, codex, default] = parse_config_file(
        {
            "mcpServers": {
                "a": {**base, "timeout": 1500},  # Claude Code: milliseconds
                "b": {**base, "tool_timeout_sec": 2},  # Codex: seconds
                "c": base,
            }
        }
    )
    assert (claude.tool_timeout, codex.tool_timeout, default.tool_timeout) == (1.5, 2.0, None)
    for bad in (0, -1, "60", True):
        with pytest.raises(Exception, match=r"mcpServers\[\"x\"\]\.timeout must be"):
            parse_config_file({"mcpServers": {"x": {**base, "timeout": bad}}})


async def test_a_call_never_answered_ends_and_the_turn_goes_on(tmp_path, log: Log) -> None:
    # The server's config bounds its calls (ACP shape, timeout in ms, as run passes it).
    server = {
        "name": "t",
        "command": sys.executable,
        "args": [APP, "stdio"],
        "env": [{"name": "MCP_TEST_LOG", "value": str(log.path)}],
        "timeout": 1000,
    }
    script = tmp_path / "script.json"
    steps = [
        {"tool_calls": [{"name": "mcp__t__slow", "arguments": {"seconds": 600}}]},
        {"text": "It timed out."},
    ]
    script.write_text(json.dumps({"steps": steps}))
    async with AgentHost(
        store="memory:", model=f"scripted:{script}", workdir=tmp_path, approval="auto",
        mcp_servers=[server], capture_commands=False,
    ) as host:  # fmt: skip
        result = await host.send("call the slow tool")
        history = await host.get_items()
    assert result.stop_reason == "end_turn" and result.text == "It timed out."
    [output] = [i["output"] for i in history if i.get("type") == "function_call_output"]
    assert output == (
        "mcp__t__slow did not finish within 1 s; the MCP server was told to cancel it"
    )
    await wait_until(lambda: "slow cancelled CancelledError" in log.lines())


async def test_a_server_that_exits_leaving_a_child_on_its_stdout(log: Log) -> None:
    # No end of file comes (the child holds the pipe): the exit itself is noticed.
    config = McpServerConfig(
        name="t",
        command=sys.executable,
        args=(APP, "stdio-child"),
        env=(("MCP_TEST_LOG", str(log.path)),),
    )
    servers = McpServers([config], start_timeout=15, call_timeout=20)
    try:
        reports = Reports()
        text, error = await servers.call("mcp__t__crash", {}, reports)
        assert error and text == "MCP server 't' stopped during the call (restarted; try again)"
        assert reports.states() == [("t", "ready"), ("t", "restarted")]
        assert "crashing on purpose" in reports[1].message
        first_child = children(log)[0]
        await wait_until(lambda: ended(first_child))  # what it left is ended too
        assert await servers.call("mcp__t__echo", {"text": "back"}) == ("back", False)
    finally:
        await servers.close()


async def test_a_server_that_hangs_on_initialize_is_killed_whole(log: Log) -> None:
    config = McpServerConfig(
        name="hang",
        command=sys.executable,
        args=(APP, "hang-child"),
        env=(("MCP_TEST_LOG", str(log.path)),),
    )
    servers = McpServers([config], start_timeout=2)
    try:
        reports = Reports()
        await servers.tools(reports)
        assert [r.message for r in reports] == [
            "MCP server 'hang' failed to start: did not answer initialize within 2 s"
        ]
        [pid] = log.pids()
        [child] = children(log)
        # Reported, then ended at once: the server and the child it left (which
        # ignores SIGTERM and holds the server's stdout).
        await wait_until(lambda: ended(pid) and ended(child), timeout=15)
    finally:
        await servers.close()


HOST = """
import asyncio, os, sys
from agent_host.session.mcp import McpServerConfig, McpServers

async def main():
    app, log = sys.argv[1], sys.argv[2]
    env = (("MCP_TEST_LOG", log),)
    servers = McpServers([
        McpServerConfig(name="hang", command=sys.executable, args=(app, "hang-child"), env=env),
        McpServerConfig(name="t", command=sys.executable, args=(app, "stdio"), env=env),
    ], start_timeout=600)
    tools = asyncio.ensure_future(servers.tools())
    while not tools.done():
        await asyncio.sleep(0.1)
        lines = open(log).read().splitlines() if os.path.exists(log) else []
        if [line.split()[0] for line in lines].count("pid") == 2 and "child" in str(lines):
            break
    print("started", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def test_sigkill_of_the_host_leaves_no_server_process(log: Log, tmp_path: Path) -> None:
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, APP, str(log.path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert host.stdout is not None and host.stdout.readline() == "started\n"
        # One server still in initialize (with a child holding its stdout), one running.
        deadline = time.monotonic() + 30
        while len(children(log)) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [*log.pids(), *children(log)]
        assert len(pids) == 3 and not any(ended(p) for p in pids)
        os.kill(host.pid, signal.SIGKILL)
        host.wait(10)
        deadline = time.monotonic() + 15
        while not all(ended(p) for p in pids):
            assert time.monotonic() < deadline, [p for p in pids if not ended(p)]
            time.sleep(0.05)
    finally:
        host.kill()
        host.wait(10)
        for pid in [*log.pids(), *children(log)]:
            with_suppress_kill(pid)


def with_suppress_kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
