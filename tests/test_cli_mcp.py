"""``agent-host run --mcp-config FILE``: the JSON Claude Code and Cursor keep, a
turn that calls a server's tool, a server that fails said on stderr, a bad file a
usage error."""

from __future__ import annotations

import json
import sys

import pytest

from .mcp_npm import npm_mcp  # noqa: F401  (fixture)
from .session.mcp.conftest import APP
from .test_cli import agent_host, common, project, script, store  # noqa: F401

pytestmark = pytest.mark.slow


def config(tmp_path, servers: dict) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def test_run_calls_tools_of_two_configured_servers(tmp_path, project, store, script, npm_mcp):  # noqa: F811
    made = project.resolve() / "made.txt"
    echo = {"name": "mcp__t__echo", "arguments": {"text": "from mcp"}}
    write = {"name": "mcp__fs__write_file", "arguments": {"path": str(made), "content": "hi\n"}}
    model = script([{"tool_calls": [echo, write]}, {"text": "Echoed."}])
    servers = {
        "t": {"command": sys.executable, "args": [APP, "stdio"], "env": {"K": "v"}},
        "fs": {"command": npm_mcp["filesystem"], "args": [str(project.resolve())]},
    }
    done = agent_host(
        "run", "echo it", "--approve", "auto", "--mcp-config", config(tmp_path, servers),
        *common(store, project, model),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tool mcp__t__echo(text='from mcp')" in done.stdout
    assert "Echoed." in done.stdout
    assert made.read_text() == "hi\n"
    assert "created made.txt" in done.stdout  # captured, as a command's change


def test_a_server_that_fails_is_named_on_stderr(tmp_path, project, store, script):  # noqa: F811
    model = script([{"text": "No tools needed."}])
    servers = {"gone": {"command": str(tmp_path / "missing-server")}}
    done = agent_host(
        "run", "hi", "--mcp-config", config(tmp_path, servers), *common(store, project, model)
    )
    assert done.returncode == 0, done.stderr
    assert "No tools needed." in done.stdout
    assert "MCP server 'gone'" in done.stderr


@pytest.mark.parametrize(
    "content, says",
    [
        ("{not json", "mcp.json"),
        ('{"mcpServers": {"x": {"args": ["a"]}}}', 'mcpServers["x"].command'),
    ],
)
def test_a_bad_config_file_is_a_usage_error(tmp_path, project, store, content, says):  # noqa: F811
    path = tmp_path / "mcp.json"
    path.write_text(content)
    done = agent_host("run", "hi", "--mcp-config", str(path), *common(store, project))
    assert done.returncode == 2
    assert says in done.stderr
