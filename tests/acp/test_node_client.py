"""``agent-host acp`` driven by the official TypeScript client, @agentclientprotocol/sdk.

The tests themselves are node:test files in tests/acp/node (see harness.mjs there):
each spawns ``python -m agent_host acp`` of this interpreter (AGENT_HOST_PYTHON) on
the scripted model and talks to it over stdio through the SDK's stable v1 API --
initialize, session/new|load|list|prompt|cancel, permission asks, the /checkpoints
and /rewind slash commands and the _agent-host/* extension methods.

``npm ci`` runs in tests/acp/node only when node_modules is missing or older than
package-lock.json (with npm's cache warm it takes a few seconds). Without Node.js
>= 18 and npm the test skips -- unless AGENT_HOST_REQUIRE_EDITORS=1 (CI), where a
missing toolchain is a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..node_toolchain import find_node as find_node_of
from ..node_toolchain import unavailable
from . import schema_check

REPO = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).resolve().parent / "node"
MIN_NODE = 18
INSTALL_HINT = (
    f"install Node.js >= {MIN_NODE} with npm (Debian: apt-get install nodejs npm); "
    "the SDK comes from the npm registry"
)
NPM_CI_TIMEOUT = 300
NPM_TEST_TIMEOUT = 180
EXPECTED = (
    "initialize answers protocol version 1 and advertises loadSession",
    "a prompt streams agent_message_chunk and a write_file tool call that lands on disk",
    "ask mode: a permission request answered allow_once writes the file",
    "ask mode: a permission request answered reject_once leaves the file unwritten",
    "session/cancel during a slow step ends the turn with stopReason cancelled",
    "session/cancel while a permission request is pending: cancelled, file unwritten",
    "session/load in a new agent process replays the conversation before answering",
    "session/list lists the stored sessions, filtered by cwd",
    "an unknown session id is ACP's -32002 (resource not found); a malformed one invalid params",
    "session/close and session/delete of an unknown session resolve: the SDK reads -32002 as done",
    "/checkpoints lists the prompt's checkpoint and /rewind SEQ restores the file",
    "/rewind -1 goes one prompt back; /rewind with a bad target says so",
    "_agent-host/checkpoints and _agent-host/restore through the SDK's ext-method call",
    "with fs offered, an edit lands through fs/write_text_file; /rewind restores it and "
    "/undo-rewind brings it back",
    "with fs offered, the agent writes only through the client: the disk is untouched "
    "until the client writes",
    "with fs offered, a write the client refuses fails the tool call and leaves the disk",
)


def missing_toolchain(reason: str) -> None:
    """Skip, or fail when the environment requires the editors' toolchain (CI)."""
    unavailable(f"the ACP TypeScript-client tests need Node.js and npm: {reason}; {INSTALL_HINT}")


def find_node() -> tuple[str | None, str | None, str]:
    return find_node_of(MIN_NODE)


def npm_env(wire: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if wire is not None:
        env["AGENT_HOST_WIRE_DIR"] = str(wire)  # harness.mjs records every message there
    env["AGENT_HOST_PYTHON"] = sys.executable
    # The agent the node tests spawn is this checkout's, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["npm_config_update_notifier"] = "false"
    env["npm_config_fund"] = "false"
    env["npm_config_audit"] = "false"
    env.pop("NODE_OPTIONS", None)
    env.pop("NODE_TEST_CONTEXT", None)  # as if not run from inside another node --test
    return env


def run(
    npm: str, args: list[str], timeout: float, wire: Path | None = None
) -> subprocess.CompletedProcess[str]:
    command = f"npm {' '.join(args)}"
    try:
        return subprocess.run(
            [npm, *args],
            cwd=SUITE,
            env=npm_env(wire),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        tail = f"{(out or '')[-20000:]}\n{(err or '')[-5000:]}"
        pytest.fail(f"{command} took over {timeout}s; its output:\n{tail}", pytrace=False)


def needs_install() -> bool:
    """node_modules is missing, lacks the SDK, or is older than package-lock.json."""
    modules = SUITE / "node_modules"
    installed = modules / ".package-lock.json"  # npm writes it on every install
    if not (modules / "@agentclientprotocol" / "sdk" / "package.json").is_file():
        return True
    stamp = installed if installed.exists() else modules
    return stamp.stat().st_mtime < (SUITE / "package-lock.json").stat().st_mtime


@pytest.mark.slow
@pytest.mark.timeout(NPM_CI_TIMEOUT + NPM_TEST_TIMEOUT + 60)
def test_the_typescript_sdk_client_drives_the_agent(tmp_path: Path) -> None:
    _node, npm, why = find_node()
    if npm is None:
        missing_toolchain(why)
        return
    if needs_install():
        done = run(npm, ["ci", "--prefer-offline", "--no-audit", "--no-fund"], NPM_CI_TIMEOUT)
        if done.returncode != 0:
            tail = (done.stdout + "\n" + done.stderr)[-20000:]
            pytest.fail(f"npm ci in {SUITE} exited {done.returncode}:\n{tail}", pytrace=False)

    done = run(npm, ["test"], NPM_TEST_TIMEOUT, wire=tmp_path / "wire")
    out = done.stdout + "\n" + done.stderr
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|cancelled) (\d+)$", out, re.M)}
    if done.returncode != 0 or counts.get("fail") != 0 or counts.get("cancelled") != 0:
        pytest.fail(
            f"npm test in {SUITE} exited {done.returncode} ({counts}); the node output:\n"
            f"{out[-30000:]}",
            pytrace=False,
        )
    missing = [
        name for name in EXPECTED if not re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M)
    ]
    assert not missing, f"these node tests did not pass: {missing}\n{out[-30000:]}"
    assert counts.get("pass", 0) >= len(EXPECTED), f"too few tests passed: {counts}\n{out[-30000:]}"
    # No test hides behind a todo or a skip.
    todos = re.findall(r"^(?:not )?ok \d+ - .* # (?:TODO|SKIP)(.*)$", out, re.M)
    assert not todos, f"todo or skipped tests: {todos}"
    # Every message the agent sent in every node test is ACP v1.
    checked, wrong = schema_check.check_log_dir(tmp_path / "wire")
    assert not wrong, "messages off the ACP v1 schema:\n" + "\n".join(wrong[:20])
    assert checked > 100, f"only {checked} agent messages were recorded"
