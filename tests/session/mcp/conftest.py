"""Fixtures for the MCP tests: the test server (tests/session/mcp/server_app.py)
as a config, the log it keeps, and a set of servers that is closed after the test.

The servers of these tests run unconfined (sandbox ``full``, here and in the hosts
they spawn): they test a server's lifecycle by its host pids and log outside any
workspace. test_sandboxed.py runs them confined."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agent_host.session.mcp import McpServerConfig, McpServers, McpServerStatus
from agent_host.session.sandbox import Sandbox, confine

APP = str(Path(__file__).with_name("server_app.py"))


class Log:
    """The file the test server appends to (``MCP_TEST_LOG``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def pids(self) -> list[int]:
        return [int(line.split()[1]) for line in self.lines() if line.startswith("pid ")]


class Reports(list[McpServerStatus]):
    """A ``report`` callback that keeps what it was given."""

    async def __call__(self, status: McpServerStatus) -> None:
        self.append(status)

    def states(self) -> list[tuple[str, str]]:
        return [(s.server, s.state) for s in self]


@pytest.fixture(autouse=True)
def unconfined_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine, "_default", Sandbox("full"))
    monkeypatch.setenv("AGENT_HOST_SANDBOX", "full")


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return Log(tmp_path / "server.log")


@pytest.fixture
def stdio(log: Log) -> McpServerConfig:
    return McpServerConfig(
        name="t",
        command=sys.executable,
        args=(APP, "stdio"),
        env=(("MCP_TEST_LOG", str(log.path)),),
    )


@pytest.fixture
async def servers(stdio: McpServerConfig) -> AsyncIterator[McpServers]:
    s = McpServers([stdio], start_timeout=15)
    yield s
    await s.close()


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)
