"""McpServers against the real test server over stdio: tools, results, cancels,
crashes and restarts, servers that will not start, and close()."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest

from agent_host.session.mcp import McpServerConfig, McpServers
from agent_host.session.mcp import servers as servers_module

from .conftest import APP, Log, Reports, process_gone, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


@pytest.mark.exclusive  # it times calls that run side by side
async def test_tools_and_results(servers: McpServers) -> None:
    reports = Reports()
    tools = await servers.tools(reports)
    assert reports.states() == [("t", "ready")]
    assert reports[0].tools == len(tools) and "ready: 12 tools" in reports[0].message
    by_name = {t.name: t for t in tools}
    echo = by_name["echo"]
    assert echo.qualified == "mcp__t__echo" and echo.server == "t"
    assert echo.read_only and not by_name["add"].read_only
    assert echo.description == "Echo the text back."
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert by_name["tiny_image"].input_schema["type"] == "object"
    dotted = by_name["dotted.name"]
    assert dotted.qualified.startswith("mcp__t__dotted_name_")
    assert servers.find(dotted.qualified) is dotted and servers.find("mcp__t__nope") is None
    assert await servers.call(dotted.qualified, {}) == ("dotted", False)

    assert await servers.call("mcp__t__echo", {"text": "hi"}) == ("hi", False)
    text, error = await servers.call("mcp__t__add", {"a": 2, "b": 3})
    assert not error and '"total": 5' in text
    assert await servers.call("mcp__t__tiny_image", {}) == ("[image: image/png, 70 bytes]", False)
    text, error = await servers.call("mcp__t__mixed", {})
    assert not error
    assert text == (
        "hello\n[image: image/png, 70 bytes]\n[resource file:///notes.txt]\nthe notes\n"
        "[resource file:///blob.bin: application/octet-stream, 5 bytes]\n"
        "[resource link: big.log file:///big.log]"
    )
    text, error = await servers.call("mcp__t__big", {"chars": 30_050})
    assert not error and text == "x" * 30_000 + "\n[... 50 more characters cut]"
    text, error = await servers.call("mcp__t__fail", {})
    assert error and "failed on purpose" in text
    text, error = await servers.call("mcp__t__echo", {"txt": "typo"})
    assert error and "text" in text and "Field required" in text
    text, error = await servers.call("mcp__t__nope", {})
    assert error and text.startswith("unknown MCP tool 'mcp__t__nope'; the MCP tools are: ")
    assert "mcp__t__echo" in text
    text, error = await servers.call("mcp__t__echo", ["hi"])  # type: ignore[arg-type]
    assert error and "must be a JSON object" in text

    # Calls from several tasks share the one server.
    started = time.monotonic()
    results = await asyncio.gather(
        *(servers.call("mcp__t__slow", {"seconds": 0.5}) for _ in range(3))
    )
    assert results == [("slept", False)] * 3 and time.monotonic() - started < 1.4
    assert await servers.tools(reports) == tools and len(reports) == 1  # reused, not restarted


async def test_list_changed_is_picked_up(servers: McpServers) -> None:
    before = await servers.tools()
    assert servers.find("mcp__t__dynamic") is None
    assert await servers.call("mcp__t__add_dynamic", {}) == ("added", False)
    await asyncio.sleep(0.2)  # the notification follows the call's result
    after = await servers.tools()
    assert [t.qualified for t in after] == [t.qualified for t in before] + ["mcp__t__dynamic"]
    assert await servers.call("mcp__t__dynamic", {}) == ("dynamic result", False)


async def test_cancel_reaches_server_and_next_call_works(servers: McpServers, log: Log) -> None:
    await servers.tools()
    call = asyncio.create_task(servers.call("mcp__t__slow", {"seconds": 10}))
    await wait_until(lambda: any(line.startswith("slow start") for line in log.lines()))
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_until(lambda: "slow cancelled CancelledError" in log.lines())
    assert await servers.call("mcp__t__echo", {"text": "still here"}) == ("still here", False)
    assert len(log.pids()) == 1


async def test_call_timeout(stdio: McpServerConfig, log: Log) -> None:
    servers = McpServers([stdio], start_timeout=15, call_timeout=0.5)
    try:
        text, error = await servers.call("mcp__t__slow", {"seconds": 10})
        assert error and text == (
            "mcp__t__slow did not finish within 0.5 s; the MCP server was told to cancel it"
        )
        await wait_until(lambda: "slow cancelled CancelledError" in log.lines())
        assert await servers.call("mcp__t__echo", {"text": "ok"}) == ("ok", False)
    finally:
        await servers.close()


async def test_crash_mid_call_restarts(servers: McpServers, log: Log) -> None:
    reports = Reports()
    await servers.tools(reports)
    text, error = await servers.call("mcp__t__crash", {}, reports)
    assert error and text == "MCP server 't' stopped during the call (restarted; try again)"
    assert reports.states() == [("t", "ready"), ("t", "restarted")]
    assert reports[1].message == (
        "MCP server 't' stopped (exited: crashing on purpose) and was restarted: 12 tools"
    )
    assert reports[1].tools == 12
    assert await servers.call("mcp__t__echo", {"text": "back"}, reports) == ("back", False)
    assert len(log.pids()) == 2 and len(reports) == 2


async def test_dead_before_call_is_retried(servers: McpServers, log: Log) -> None:
    reports = Reports()
    await servers.tools(reports)
    first = log.pids()[0]
    os.kill(first, signal.SIGKILL)
    await wait_until(lambda: process_gone(first))
    await asyncio.sleep(0.1)  # the stdio reader sees the end of the pipe
    assert await servers.call("mcp__t__echo", {"text": "again"}, reports) == ("again", False)
    assert reports.states() == [("t", "ready"), ("t", "restarted")]
    assert len(log.pids()) == 2


async def test_second_death_in_one_call_is_an_error(servers: McpServers, log: Log) -> None:
    reports = Reports()
    await servers.tools(reports)
    os.kill(log.pids()[0], signal.SIGKILL)
    await asyncio.sleep(0.3)
    # Restarted once for the call, then it dies during it: an error, not a loop.
    text, error = await servers.call("mcp__t__crash", {}, reports)
    assert error and text == "MCP server 't' stopped again during the call"
    assert reports.states() == [("t", "ready"), ("t", "restarted")]
    # The next call starts it again.
    assert await servers.call("mcp__t__echo", {"text": "x"}, reports) == ("x", False)
    assert len(log.pids()) == 3


async def test_servers_that_do_not_start(
    stdio: McpServerConfig, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = [
        stdio,
        McpServerConfig(name="missing", command="npx-missing"),
        McpServerConfig(name="hang", command=sys.executable, args=(APP, "hang")),
        McpServerConfig(
            name="exit", command=sys.executable, args=(APP, "exit"), env=(("TOKEN", "tok-123"),)
        ),
        McpServerConfig(name="nocwd", command=sys.executable, cwd=str(tmp_path / "gone")),
        McpServerConfig(
            name="web", url="http://127.0.0.1:9/mcp", headers=(("Authorization", "Bearer b-456"),)
        ),
    ]
    # The bound leaves the good server room to start on a loaded machine; that the
    # servers start together shows as the whole costing one bound, not five.
    servers = McpServers(configs, start_timeout=8)
    try:
        reports = Reports()
        started = time.monotonic()
        tools = await servers.tools(reports)
        assert time.monotonic() - started < 12
        assert {t.server for t in tools} == {"t"}
        assert reports.states() == [
            ("t", "ready"),
            ("missing", "failed"),
            ("hang", "failed"),
            ("exit", "failed"),
            ("nocwd", "failed"),
            ("web", "failed"),
        ]
        messages = [r.message for r in reports[1:]]
        assert messages[:4] == [
            "MCP server 'missing' failed to start: command 'npx-missing' not found",
            "MCP server 'hang' failed to start: did not answer initialize within 8 s",
            "MCP server 'exit' failed to start: exited: fatal: token *** was refused",
            f"MCP server 'nocwd' failed to start: working directory "
            f"{str(tmp_path / 'gone')!r} does not exist",
        ]
        assert messages[4].startswith(
            "MCP server 'web' failed to start: cannot connect to http://127.0.0.1:9/mcp: "
        )
        assert all("tok-123" not in m and "b-456" not in m for m in messages)

        # Failed servers are not retried on every use...
        assert await servers.tools(reports) == tools and len(reports) == 6
        text, error = await servers.call("mcp__missing__x", {}, reports)
        assert error and len(reports) == 6
        assert text == f"{messages[0]}; mcp__missing__x was not called"
        # ...but after a while, or on restart().
        monkeypatch.setattr(servers_module, "RETRY_FAILED_AFTER", 0.0)
        only_missing = McpServers([configs[1]], start_timeout=2)
        again = Reports()
        await only_missing.tools(again)
        await only_missing.tools(again)
        assert again.states() == [("missing", "failed")] * 2
        await only_missing.close()
        monkeypatch.setattr(servers_module, "RETRY_FAILED_AFTER", 60.0)
        await servers.restart("missing")
        await servers.tools(reports)
        assert reports.states()[6:] == [("missing", "failed")]
    finally:
        await servers.close()


async def test_close_ends_every_process(servers: McpServers, log: Log) -> None:
    await servers.tools()
    pid = log.pids()[0]
    assert not process_gone(pid)
    reports = Reports()
    await servers.close(reports)
    assert process_gone(pid)
    assert reports.states() == [("t", "stopped")]
    assert await servers.tools() == []
    text, error = await servers.call("mcp__t__echo", {"text": "x"})
    assert error and "shut down" in text
    await servers.close()  # idempotent
