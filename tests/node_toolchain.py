"""Node.js and npm for the tests that need them (the VS Code extension, the npm ACP
client, the npm MCP servers): found, or the test skipped -- failed on CI, where
``AGENT_HOST_REQUIRE_EDITORS=1`` says every toolchain must be there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest


def find_node(min_version: int) -> tuple[str | None, str | None, str]:
    """node and npm, or Nones and why not."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if p is None)
        return None, None, f"{missing} not on PATH"
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return None, None, f"{node} --version failed: {exc}"
    found = re.match(r"v(\d+)\.", version)
    if not found or int(found.group(1)) < min_version:
        return None, None, f"{node} is {version or 'of an unknown version'}, needs >= {min_version}"
    return node, npm, ""


def unavailable(message: str) -> None:
    """Skip with ``message``, or fail when the environment requires the toolchains."""
    if os.environ.get("AGENT_HOST_REQUIRE_EDITORS") == "1":
        pytest.fail(f"{message} (AGENT_HOST_REQUIRE_EDITORS=1)", pytrace=False)
    pytest.skip(message)
