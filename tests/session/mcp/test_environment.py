"""An MCP stdio server we start sees os.environ under the host's shell environment
policy, its config's own env over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_host.session.environment import EnvironmentPolicy, using_policy
from agent_host.session.mcp import McpServers

pytestmark = pytest.mark.timeout(60)


def environ_of(pid: int) -> dict[str, str]:
    data = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in data.decode().split("\0") if "=" in item)


async def server_environ(servers: McpServers) -> dict[str, str]:
    text, error = await servers.call("mcp__t__pid", {})
    assert not error, text
    return environ_of(int(text))


@pytest.fixture(autouse=True)
def secrets_in_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-for-servers")
    monkeypatch.setenv("MY_TOKEN", "tok")
    monkeypatch.setenv("PLAIN_SETTING", "kept")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
async def test_the_server_gets_the_environment_without_secrets(servers, log):
    seen = await server_environ(servers)
    assert "OPENAI_API_KEY" not in seen and "MY_TOKEN" not in seen
    assert seen["PLAIN_SETTING"] == "kept" and "PATH" in seen
    assert seen["MCP_TEST_LOG"] == str(log.path)  # its config's env


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
async def test_the_policy_in_force_applies_and_the_config_env_wins(stdio, log):
    policy = EnvironmentPolicy(include=["MY_TOKEN"], set={"MCP_TEST_LOG": "no", "FORCED": "1"})
    servers = McpServers([stdio], start_timeout=15)
    try:
        with using_policy(policy):
            seen = await server_environ(servers)
    finally:
        await servers.close()
    assert seen["MY_TOKEN"] == "tok" and seen["FORCED"] == "1"
    assert seen["MCP_TEST_LOG"] == str(log.path)
    assert "OPENAI_API_KEY" not in seen
