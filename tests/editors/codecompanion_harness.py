"""The harness of the CodeCompanion.nvim tests: the pinned, unmodified CodeCompanion
19.22.0 (with plenary.nvim) in headless Neovim, against a real ``agent-host acp``.

The archive is ``../shared/clients/nvim-codecompanion-19.22.0.tar.gz`` beside the
repository (``$AGENT_HOST_CLIENTS`` overrides the folder); it is unpacked into a
temporary folder once per test session. Without it the tests skip -- fail when
AGENT_HOST_REQUIRE_EDITORS=1 (CI).

Each run is one Neovim executing tests/editors/codecompanion/driver.lua with a list
of actions; the adapter's command is this checkout's ``agent-host acp`` on the
scripted model, wrapped in tests/acp/wire_tap.py so every message the agent sends
is recorded and checked against the ACP v1 schema (tests/acp/schema_check.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from ..acp import schema_check
from ..node_toolchain import unavailable
from .pinned_clients import clients_dir

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "codecompanion" / "driver.lua"
WIRE_TAP = str(REPO / "tests" / "acp" / "wire_tap.py")
ARCHIVE_NAME = "nvim-codecompanion-19.22.0.tar.gz"
RUN_TIMEOUT = 120


def unpack(into: Path) -> Path:
    """The archive unpacked under ``into`` (codecompanion.nvim/, plenary.nvim/)."""
    archive = clients_dir() / ARCHIVE_NAME
    if not archive.is_file():
        unavailable(
            f"the CodeCompanion tests need {archive} (pinned CodeCompanion.nvim 19.22.0 with "
            "plenary.nvim); set AGENT_HOST_CLIENTS to the folder that holds it"
        )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    found = next(into.rglob("codecompanion.nvim"), None)
    if found is None or not (found.parent / "plenary.nvim").is_dir():
        pytest.fail(f"{archive} holds no codecompanion.nvim/ beside plenary.nvim/", pytrace=False)
    return found.parent


def agent_command(base: Path, script: Path, *extra: str, model: str | None = None) -> list[str]:
    """This checkout's ``agent-host acp`` on the scripted model, its stdio recorded
    under ``base/wire``."""
    return [
        sys.executable,
        WIRE_TAP,
        str(base / "wire"),
        "--",
        sys.executable,
        "-m",
        "agent_host",
        "acp",
        "--model",
        model or f"scripted:{script}",
        "--store",
        str(base / "store"),
        *extra,
    ]


def run(
    nvim: str,
    clients: Path,
    base: Path,
    actions: list[dict[str, Any]],
    steps: list[dict[str, Any]] | None = None,
    files: dict[str, str] | None = None,
    args: tuple[str, ...] = ("--approval", "auto"),
    model: str | None = None,
    env: dict[str, str | None] | None = None,
) -> list[dict[str, Any]]:
    """Run the driver over ``actions`` in a project ``base/proj`` holding ``files``;
    the results, one per action. Fails on a driver error or a timeout."""
    root = base / "proj"
    root.mkdir(parents=True)
    for rel, text in (files or {}).items():
        (root / rel).write_bytes(text.encode())
    script = base / "script.json"
    script.write_text(json.dumps({"steps": steps or []}))
    out = base / "out.json"
    config = base / "config.json"
    config.write_text(
        json.dumps(
            {
                "clients": str(clients),
                "command": agent_command(base, script, *args, model=model),
                "out": str(out),
                "actions": [
                    {**a, "path": str(root / a["path"])} if "path" in a else a for a in actions
                ],
            }
        )
    )
    xdg = base / "xdg"
    full_env = {
        **os.environ,
        "AGENT_HOST_CC_CONFIG": str(config),
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_STATE_HOME": str(xdg / "state"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
    }
    for name, value in (env or {}).items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    try:
        proc = subprocess.run(
            [nvim, "--headless", "--clean", "-l", str(DRIVER)],
            cwd=root,
            env=full_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout, stderr = f"timeout after {RUN_TIMEOUT}s", str(exc.stdout), str(exc.stderr)
    observed = json.loads(out.read_text()) if out.exists() else {}
    if code != 0 or not observed.get("ok"):
        logs = sorted((xdg / "state").rglob("codecompanion.log"))
        log = logs[0].read_text()[-6000:] if logs else "(none)"
        pytest.fail(
            f"driver.lua failed (exit {code}): {observed.get('error')}\n"
            f"results so far: {json.dumps(observed.get('results'))[:4000]}\n"
            f"--- stdout\n{stdout[-3000:]}\n--- stderr\n{stderr[-3000:]}\n"
            f"--- codecompanion.log\n{log}",
            pytrace=False,
        )
    results: list[dict[str, Any]] = observed["results"]
    return results


def messages(base: Path, side: str = "agent") -> list[dict[str, Any]]:
    """Every message one side ("agent" or "client") of the run's connections sent,
    in order per connection."""
    found = []
    for path in sorted((base / "wire").glob("*.jsonl")):
        for row in path.read_text().splitlines():
            entry = json.loads(row)
            if entry["from"] == side:
                found.append(json.loads(entry["line"]))
    return found


def agent_messages(base: Path) -> list[dict[str, Any]]:
    return messages(base, "agent")


def assert_schema_valid(base: Path) -> int:
    """Every agent message of the run validates against ACP v1; how many there were."""
    checked, wrong = schema_check.check_log_dir(base / "wire")
    assert not wrong, "messages off the ACP v1 schema:\n" + "\n".join(wrong[:20])
    assert checked > 0, "no agent messages were recorded"
    return checked


def tool_updates(base: Path) -> list[dict[str, Any]]:
    """The agent's tool_call_update notifications that ended a tool call."""
    return [
        m["params"]["update"]
        for m in agent_messages(base)
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "tool_call_update"
        and m["params"]["update"].get("status") in ("completed", "failed")
    ]
