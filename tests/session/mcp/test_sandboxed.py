"""A stdio MCP server runs under the session's sandbox unless its config says
otherwise: confined, it writes only the session's roots (and its private temp)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_host.session.mcp import McpServerConfig, McpServers, parse_config_file
from agent_host.session.sandbox import Sandbox, mechanism, using_sandbox

from .conftest import APP, Reports

pytestmark = pytest.mark.skipif(
    not mechanism().available, reason=f"no sandbox: {mechanism().reason}"
)


def server(log: Path, sandbox=None) -> McpServerConfig:
    return McpServerConfig(
        name="t",
        command=sys.executable,
        args=(APP, "stdio"),
        env=(("MCP_TEST_LOG", str(log)),),
        sandbox=sandbox,
    )


async def start(config: McpServerConfig, roots: list[Path]) -> tuple[McpServers, Reports]:
    servers = McpServers([config], start_timeout=20)
    reports = Reports()
    # As a session's turn starts it: under the session's sandbox and roots.
    with using_sandbox(Sandbox("workspace-write"), roots):
        await servers.tools(reports)
    return servers, reports


async def test_a_confined_server_writes_its_roots_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    servers, reports = await start(server(ws / "server.log"), [ws])
    try:
        assert reports.states() == [("t", "ready")]
        assert (ws / "server.log").read_text().startswith("pid ")
        # Its own pid namespace: the agent's processes are not there to see.
        pid, error = await servers.call("mcp__t__pid", {})
        assert not error and int(pid) < 10
    finally:
        await servers.close()


async def test_a_confined_server_cannot_write_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    servers, reports = await start(server(tmp_path / "server.log"), [ws])
    try:
        assert reports.states() == [("t", "failed")]
        assert "Read-only file system" in reports[0].message
        assert not (tmp_path / "server.log").exists()
    finally:
        await servers.close()


async def test_a_server_configured_full_runs_unconfined(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    [config] = parse_config_file(
        {
            "mcpServers": {
                "t": {
                    "command": sys.executable,
                    "args": [APP, "stdio"],
                    "env": {"MCP_TEST_LOG": str(tmp_path / "server.log")},
                    "sandbox": "full",
                }
            }
        }
    )
    servers, reports = await start(config, [ws])
    try:
        assert reports.states() == [("t", "ready")]
        assert (tmp_path / "server.log").exists()
    finally:
        await servers.close()


def test_a_bad_server_sandbox_names_the_field() -> None:
    with pytest.raises(ValueError, match=r'mcpServers\["t"\]\.sandbox must be one of'):
        parse_config_file({"mcpServers": {"t": {"command": "x", "sandbox": "docker"}}})
