"""The reference MCP servers from the npm registry, installed once for the tests.

``@modelcontextprotocol/server-filesystem`` and ``@modelcontextprotocol/server-everything``
are real servers nobody here wrote. They are installed with npm into a folder kept
between runs (``AGENT_HOST_TEST_CACHE``, default ``~/.cache/agent-host-tests``),
pinned, so a warm run costs nothing. Without Node.js >= 18 and npm the tests that
need them skip -- unless ``AGENT_HOST_REQUIRE_EDITORS=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

from .node_toolchain import find_node, unavailable

PACKAGES = {
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/server-everything": "2026.8.31",
}
MIN_NODE = 18


def cache_dir() -> Path:
    root = os.environ.get("AGENT_HOST_TEST_CACHE") or Path.home() / ".cache" / "agent-host-tests"
    key = "-".join(f"{name.rsplit('/', 1)[-1]}@{v}" for name, v in sorted(PACKAGES.items()))
    return Path(root) / f"mcp-npm-{key}"


def _unavailable(reason: str) -> None:
    unavailable(f"the npm MCP servers are not available: {reason}")


def install() -> Path:
    """The folder whose node_modules/.bin holds the servers, installing it if needed."""
    _node, npm, why = find_node(MIN_NODE)
    if npm is None:
        _unavailable(f"{why} (Debian: apt-get install nodejs npm)")
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock", timeout=600):
        bins = folder / "node_modules" / ".bin"
        if all((bins / b).exists() for b in BINS.values()):
            return folder
        env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false",
               "npm_config_audit": "false"}  # fmt: skip
        specs = [f"{name}@{v}" for name, v in PACKAGES.items()]
        done = subprocess.run(
            [npm, "install", "--no-save", "--prefix", str(folder), *specs],
            capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode != 0:
            pytest.fail(f"npm install {' '.join(specs)} failed:\n{done.stderr[-5000:]}")
    return folder


BINS = {"filesystem": "mcp-server-filesystem", "everything": "mcp-server-everything"}


@pytest.fixture(scope="session")
def npm_mcp() -> dict[str, str]:
    """``{"filesystem": path, "everything": path}``: each server's executable."""
    folder = install()
    return {key: str(folder / "node_modules" / ".bin" / name) for key, name in BINS.items()}
