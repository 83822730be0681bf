"""McpServers against the test server over streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from agent_host.session.mcp import McpServerConfig, McpServers

from .conftest import APP, Log, Reports

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, "the HTTP test server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the HTTP test server did not listen"
            time.sleep(0.05)


@pytest.fixture
def http_server(log: Log) -> Iterator[tuple[str, subprocess.Popen]]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, APP, "http", str(port)],
        env={**os.environ, "MCP_TEST_LOG": str(log.path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait()


async def test_http_server(http_server: tuple[str, subprocess.Popen], log: Log) -> None:
    url, process = http_server
    config = McpServerConfig(
        name="web", url=url, headers=(("X-Test", "header-value"), ("Authorization", "Bearer t"))
    )
    servers = McpServers([config], start_timeout=15)
    reports = Reports()
    try:
        tools = await servers.tools(reports)
        assert reports.states() == [("web", "ready")]
        assert "mcp__web__echo" in [t.qualified for t in tools]
        assert await servers.call("mcp__web__header", {"name": "x-test"}) == ("header-value", False)
        assert await servers.call("mcp__web__echo", {"text": "over http"}) == ("over http", False)
        text, error = await servers.call("mcp__web__add", {"a": 1, "b": 2})
        assert not error and '"total": 3' in text
        assert await servers.call("mcp__web__add_dynamic", {}) == ("added", False)
        await asyncio.sleep(0.2)  # the notification follows the call's result
        assert servers.find("mcp__web__dynamic") is None
        assert "mcp__web__dynamic" in [t.qualified for t in await servers.tools()]

        # The server goes away for good: the call is an error, never a hang.
        process.kill()
        process.wait()
        text, error = await servers.call("mcp__web__echo", {"text": "gone"}, reports)
        assert error and "cannot connect to " + url in text
        assert reports.states()[-1] == ("web", "failed")
    finally:
        await servers.close()
