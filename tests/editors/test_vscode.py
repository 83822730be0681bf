"""The VS Code extension (editors/vscode): install, type check, tests, package.

Runs, as subprocesses with timeouts, what a developer runs in editors/vscode:
``npm ci``, ``npm run typecheck`` (tsc, strict), ``npm test`` (node --test: the
protocol layer and the bundled extension against the real ``python -m agent_host
serve`` of this interpreter, via AGENT_HOST_PYTHON) and ``npm run package``
(vsce: a .vsix with the esbuild bundle and no node_modules). No editor build is
downloaded: the extension is activated on a stand-in ``vscode`` module.

The work happens in a copy of editors/vscode in a temporary folder, so a run
never races another run (or an editor) over node_modules and build outputs in
the checkout. With npm's cache warm, ``npm ci`` takes about half a minute.

Without Node.js >= 20 and npm the tests skip -- unless AGENT_HOST_REQUIRE_EDITORS=1
(CI), where a missing toolchain is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ..node_toolchain import find_node as find_node_of
from ..node_toolchain import unavailable

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
MIN_NODE = 20
INSTALL_HINT = (
    f"install Node.js >= {MIN_NODE} with npm (Debian: apt-get install nodejs npm); "
    "the extension's own packages come from the npm registry"
)
BUILD_OUTPUTS = ("node_modules", "out", "dist", "*.vsix")
VSIX = "agent-host-vscode.vsix"


def missing_toolchain(reason: str) -> None:
    """Skip, or fail when the environment requires the editors (CI)."""
    unavailable(f"VS Code extension tests need Node.js and npm: {reason}; {INSTALL_HINT}")


def find_node() -> tuple[str | None, str | None, str]:
    return find_node_of(MIN_NODE)


def run(npm: str, args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["AGENT_HOST_PYTHON"] = sys.executable
    env["npm_config_update_notifier"] = "false"
    env["npm_config_fund"] = "false"
    env["npm_config_audit"] = "false"
    env.pop("NODE_OPTIONS", None)
    try:
        done = subprocess.run(
            [npm, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"")[-20000:]
        pytest.fail(f"npm {' '.join(args)} took over {timeout}s; its output:\n{out!r}")
    if done.returncode != 0:
        tail = (done.stdout + "\n" + done.stderr)[-20000:]
        pytest.fail(f"npm {' '.join(args)} exited {done.returncode}:\n{tail}", pytrace=False)
    return done


@pytest.fixture(scope="module")
def npm() -> str:
    _node, npm, why = find_node()
    if npm is None:
        missing_toolchain(why)
    return npm


@pytest.fixture(scope="module")
def workdir(npm: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of editors/vscode with its dependencies installed by ``npm ci``."""
    work = tmp_path_factory.mktemp("vscode") / "vscode"
    shutil.copytree(EXTENSION, work, ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
    run(npm, ["ci", "--prefer-offline", "--no-audit", "--no-fund"], work, timeout=420)
    return work


@pytest.mark.timeout(900)
def test_typecheck(npm: str, workdir: Path) -> None:
    run(npm, ["run", "typecheck"], workdir, timeout=240)


@pytest.mark.timeout(600)
def test_node_tests_against_the_server(npm: str, workdir: Path) -> None:
    done = run(npm, ["test"], workdir, timeout=420)
    out = done.stdout
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|cancelled) (\d+)$", out, re.M)}
    assert counts.get("fail") == 0 and counts.get("cancelled") == 0, out[-5000:]
    assert counts.get("pass", 0) >= 30, f"too few tests ran: {counts}\n{out[-5000:]}"
    # the suites that talk to the real server all ran
    for name in (
        "send streams the turn in order and answers with its result",
        "reject_once leaves the file untouched; allow_once writes it",
        "the agent edits an open buffer through applyEdit; restore and undo bring it back and forth",  # noqa: E501 (a node test name)
        "cancel after the first text delta ends the turn as cancelled; the next turn runs",
        "Send Prompt runs a turn; the edit is shown as a diff and allowed in a modal",
        "List Sessions shows this workspace's sessions, every workspace's on request, "
        "and resumes the picked one",
        "list with a workspace: the sessions started in that folder, each naming its folder",
        "a file the user changed is left and named; Overwrite them restores it too; "
        "Undo Restore brings the edit back",
        "api.close stops a running turn; the session stays stored and takes the next prompt",
        "Fork Session… from a checkpoint: the fork is current and its chat is the "
        "conversation before it",
        "Close Session: the chat starts afresh, the next prompt starts a new session, "
        "the closed one still takes prompts",
        "a Python without agent_host: one message naming the module and the pip command; "
        "the prompt comes back; Restart works once fixed",
        "a server that exits during initialize: its exit code and last words; "
        "Set Server Path starts the right one",
        "a server of another protocol is stopped and named, not used",
        "the header shows the session's title once it has one; Select Model… applies from "
        "the next prompt; @file attaches the file",
    ):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), f"{name!r} did not pass"


@pytest.mark.timeout(600)
def test_vsix_is_the_bundle_alone(npm: str, workdir: Path) -> None:
    tested = workdir / "dist" / "extension.js"
    tested_bytes = tested.read_bytes() if tested.exists() else None
    run(npm, ["run", "package"], workdir, timeout=300)
    vsix = workdir / VSIX
    assert vsix.is_file(), f"{VSIX} was not written"
    with zipfile.ZipFile(vsix) as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("extension/package.json"))
        bundle = archive.read("extension/dist/extension.js")
    assert "extension/dist/extension.js" in names
    assert not [n for n in names if "node_modules" in n], "the .vsix must not need node_modules"
    assert not [n for n in names if n.startswith("extension/src/") or n.endswith(".ts")]
    assert manifest["main"] == "./dist/extension.js"
    assert manifest["engines"]["vscode"] == "^1.82.0"
    contributed = {c["command"] for c in manifest["contributes"]["commands"]}
    assert {
        "agentHost.sendPrompt",
        "agentHost.newSession",
        "agentHost.listSessions",
        "agentHost.showCheckpoints",
        "agentHost.restoreCheckpoint",
        "agentHost.undoRestore",
        "agentHost.compactSession",
        "agentHost.cancel",
        "agentHost.showHistory",
        "agentHost.forkSession",
        "agentHost.closeSession",
    } <= contributed
    text = bundle.decode("utf-8")
    # bundled: the language client and the protocol are inside, only vscode is external
    assert 'require("vscode")' in text
    assert "session/requestPermission" in text and "workDoneProgress" in text
    assert not re.search(r'require\("vscode-(languageclient|jsonrpc)', text)
    if tested_bytes is not None:
        assert bundle == tested_bytes, "the .vsix ships a different bundle from the one tested"
