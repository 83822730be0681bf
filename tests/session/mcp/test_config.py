"""MCP server configs from ACP's list and from a Claude Code / Cursor file; tool
names the model can take; the package importing without the SDK."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent_host.session.errors import McpConfigError
from agent_host.session.mcp import (
    McpServerConfig,
    load_config_file,
    parse_config_file,
    parse_servers,
    qualified_name,
)


def test_acp_shapes() -> None:
    stdio, http = parse_servers(
        [
            {
                "name": "fs",
                "command": "npx",
                "args": ["-y", "server-fs"],
                "env": [{"name": "TOKEN", "value": "s3cret"}],
                "cwd": "/tmp",
                "_meta": {"ignored": True},
            },
            {
                "type": "http",
                "name": "web",
                "url": "https://example.com/mcp",
                "headers": [{"name": "Authorization", "value": "Bearer abc"}],
            },
        ]
    )
    assert stdio == McpServerConfig(
        name="fs", command="npx", args=("-y", "server-fs"), env=(("TOKEN", "s3cret"),), cwd="/tmp"
    )
    assert stdio.transport == "stdio"
    assert http == McpServerConfig(
        name="web", url="https://example.com/mcp", headers=(("Authorization", "Bearer abc"),)
    )
    assert http.transport == "http"
    assert parse_servers([{"type": "stdio", "name": "a", "command": "x"}])[0].args == ()
    assert parse_servers([]) == []


def test_config_file_shapes() -> None:
    configs = parse_config_file(
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["a"], "env": {"K": "V"}, "cwd": "/w"},
                "one": {"type": "http", "url": "http://h/mcp", "headers": {"X-Key": "k"}},
                "two": {"type": "streamable-http", "url": "http://h/mcp"},
                "bare": {"url": "https://h/mcp"},
            }
        }
    )
    assert [(c.name, c.transport) for c in configs] == [
        ("fs", "stdio"),
        ("one", "http"),
        ("two", "http"),
        ("bare", "http"),
    ]
    assert configs[0].env == (("K", "V"),) and configs[0].cwd == "/w"
    assert configs[1].headers == (("X-Key", "k"),)


ACP_ERRORS = [
    ({"servers": []}, "mcpServers must be a list"),
    ([1], "mcpServers[0] must be an object"),
    ([{"command": "x"}], "mcpServers[0].name is required"),
    ([{"name": 5, "command": "x"}], "mcpServers[0].name must be a string"),
    ([{"name": "a b", "command": "x"}], "mcpServers[0].name 'a b' must be 1-64 letters"),
    ([{"name": "a__b", "command": "x"}], "with no '__'"),
    ([{"name": "_a", "command": "x"}], "no '_' at either end"),
    ([{"name": "a" * 65, "command": "x"}], "must be 1-64 letters"),
    ([{"name": "a"}], "mcpServers[0].command is required"),
    ([{"name": "a", "command": " "}], "mcpServers[0].command must not be empty"),
    ([{"name": "a", "command": "x", "args": "y"}], "mcpServers[0].args must be a list of strings"),
    (
        [{"name": "a", "command": "x"}, {"name": "b", "command": "x", "args": [1]}],
        "mcpServers[1].args[0] must be a string",
    ),
    (
        [{"name": "a", "command": "x", "env": {"K": "V"}}],
        "mcpServers[0].env must be a list of {name, value} objects",
    ),
    (
        [{"name": "a", "command": "x", "env": [{"name": "K"}]}],
        "mcpServers[0].env[0].value is required",
    ),
    (
        [{"name": "a", "command": "x", "env": [{"name": "K", "value": 1}]}],
        "mcpServers[0].env[0].value must be a string",
    ),
    ([{"name": "a", "command": "x", "cwd": 3}], "mcpServers[0].cwd must be a string"),
    ([{"type": "http", "name": "a"}], "mcpServers[0].url is required"),
    (
        [{"type": "http", "name": "a", "url": "ftp://h"}],
        "mcpServers[0].url must be an http:// or https:// URL",
    ),
    (
        [{"type": "http", "name": "a", "url": "http://h", "headers": [{"value": "v"}]}],
        "mcpServers[0].headers[0].name is required",
    ),
    (
        [{"type": "sse", "name": "a", "url": "http://h"}],
        "mcpServers[0].type 'sse' is not supported: only stdio and http MCP servers are",
    ),
    ([{"type": 7, "name": "a"}], "mcpServers[0].type of the wrong kind is not supported"),
    (
        [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}],
        "duplicate MCP server name 'a'",
    ),
]


@pytest.mark.parametrize(("value", "message"), ACP_ERRORS)
def test_acp_errors(value: object, message: str) -> None:
    with pytest.raises(McpConfigError) as info:
        parse_servers(value)
    assert message in str(info.value)


FILE_ERRORS = [
    ([], "the MCP config must be an object"),
    ({}, "mcpServers is required"),
    ({"mcpServers": []}, "mcpServers must be an object of server name to server"),
    ({"mcpServers": {"fs": {}}}, 'mcpServers["fs"].command is required'),
    ({"mcpServers": {"fs": "npx"}}, 'mcpServers["fs"] must be an object'),
    (
        {"mcpServers": {"a.b": {"command": "x"}}},
        """mcpServers["a.b"]: the server name 'a.b' must""",
    ),
    (
        {"mcpServers": {"fs": {"command": "x", "env": {"K": 1}}}},
        'mcpServers["fs"].env["K"] must be a string',
    ),
    (
        {"mcpServers": {"fs": {"command": "x", "env": ["K=V"]}}},
        'mcpServers["fs"].env must be an object of names to strings',
    ),
    (
        {"mcpServers": {"fs": {"command": "x", "args": ["a", None]}}},
        'mcpServers["fs"].args[1] must be a string',
    ),
    (
        {"mcpServers": {"w": {"type": "sse", "url": "http://h"}}},
        """mcpServers["w"].type 'sse' is not supported: only stdio and http""",
    ),
    ({"mcpServers": {"w": {"type": "http"}}}, 'mcpServers["w"].url is required'),
    (
        {"mcpServers": {"w": {"url": "http://h", "headers": {"X": 2}}}},
        'mcpServers["w"].headers["X"] must be a string',
    ),
]


@pytest.mark.parametrize(("data", "message"), FILE_ERRORS)
def test_config_file_errors(data: object, message: str) -> None:
    with pytest.raises(McpConfigError) as info:
        parse_config_file(data)
    assert message in str(info.value)


def test_load_config_file(tmp_path) -> None:
    good = tmp_path / "mcp.json"
    good.write_text(json.dumps({"mcpServers": {"fs": {"command": "npx"}}}))
    assert [c.name for c in load_config_file(good)] == ["fs"]

    missing = tmp_path / "nope.json"
    with pytest.raises(McpConfigError, match=r"cannot read MCP config .*nope\.json: No such file"):
        load_config_file(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {,}}')
    with pytest.raises(McpConfigError, match=r"broken\.json is not valid JSON: .* line 1 column"):
        load_config_file(broken)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"fs": {"command": 1}}}))
    with pytest.raises(McpConfigError) as info:
        load_config_file(bad)
    assert str(info.value) == f'MCP config {bad}: mcpServers["fs"].command must be a string'


def test_config_error_is_a_value_error() -> None:
    assert issubclass(McpConfigError, ValueError)
    with pytest.raises(McpConfigError, match="needs exactly one of command and url"):
        McpServerConfig(name="a")
    with pytest.raises(McpConfigError, match="MCP server name 'a b' must be"):
        McpServerConfig(name="a b", command="x")


def test_repr_hides_secret_values() -> None:
    stdio = McpServerConfig(
        name="fs", command="npx", env=(("GITHUB_TOKEN", "ghp_verysecret"), ("MODE", "dev"))
    )
    http = McpServerConfig(
        name="web",
        url="https://user:pw123@example.com/mcp?key=qsecret",
        headers=(("Authorization", "Bearer hsecret"),),
    )
    for config in (stdio, http):
        for text in (repr(config), str(config), f"{config}", repr([config])):
            for secret in ("ghp_verysecret", "dev", "hsecret", "pw123", "qsecret"):
                assert secret not in text
    assert "GITHUB_TOKEN" in repr(stdio) and "MODE" in repr(stdio)
    assert "Authorization" in repr(http) and "https://example.com/mcp" in repr(http)


def test_qualified_names() -> None:
    assert qualified_name("fs", "read_file") == "mcp__fs__read_file"
    dotted = qualified_name("fs", "read.file")
    assert dotted.startswith("mcp__fs__read_file_") and len(dotted) <= 64
    # Two names that sanitise alike stay apart, and neither takes the plain one.
    assert dotted != qualified_name("fs", "read file") != "mcp__fs__read_file"
    long = qualified_name("fs", "x" * 100)
    assert len(long) == 64 and long != qualified_name("fs", "x" * 99)
    for name in (dotted, long, qualified_name("s", "ünïcode/tool")):
        assert all(c.isascii() and (c.isalnum() or c in "_-") for c in name)


def test_import_does_not_load_the_sdk() -> None:
    code = (
        "import sys, agent_host.session.mcp as m\n"
        "m.parse_servers([{'name': 'a', 'command': 'x'}])\n"
        "print(sorted(k for k in sys.modules if k == 'mcp' or k.startswith(('mcp.', 'httpx'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
