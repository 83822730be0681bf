"""The VS Code extension in a real VS Code: the packaged .vsix in code-server, driven
through the workbench by playwright-core in Debian's Chromium (editors/vscode/e2e).

The extension talks to this checkout's ``agent-host serve`` (the venv's executable)
with a scripted model. Every step of editors/vscode/e2e/scenarios.mjs must pass;
screenshots and logs of each are written to a folder the test prints (kept by
pytest's tmp_path retention). code-server and the browser driver are installed once
into the test cache (tests/editors/code_server.py): about 4 minutes from nothing on
two cores, nothing later; a warm run takes about 2 minutes (npm ci and vsce included).

Without the toolchain the test skips -- fails with AGENT_HOST_REQUIRE_EDITORS=1 (CI).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .code_server import CHROMIUM, CodeServer
from .test_vscode import EXTENSION, missing_toolchain
from .test_vscode import find_node as find_extension_node

E2E = EXTENSION / "e2e" / "suite.mjs"
SCENARIOS = EXTENSION / "e2e" / "scenarios.mjs"
FIRST_RUN = EXTENSION / "e2e" / "first-run.mjs"


def step_names(scenarios: Path = SCENARIOS) -> list[str]:
    """The steps a scenarios file declares, in order."""
    found = re.findall(r"^    \[\n        (['\"])(.+?)\1,$", scenarios.read_text(), re.M)
    return [name for _quote, name in found]


def agent_host_executable() -> str:
    found = Path(sys.executable).with_name("agent-host")
    assert found.exists(), f"{found} is missing: pip install -e . into this interpreter's venv"
    return str(found)


@pytest.mark.timeout(1800)
def test_the_extension_in_code_server(
    code_server: CodeServer,
    vsix: Path,
    tmp_path: Path,
) -> None:
    run_suite(code_server, vsix, tmp_path, SCENARIOS)


@pytest.mark.timeout(1800)
def test_a_first_run_in_code_server(
    code_server: CodeServer,
    vsix: Path,
    tmp_path: Path,
) -> None:
    """Each failed start (no executable, a Python without agent_host, a server that
    exits during initialize) is one message naming it, the prompt is kept, Restart
    works once fixed; then the header's title, Select Model..., an @ mention and the
    settings search (editors/vscode/e2e/first-run.mjs)."""
    run_suite(code_server, vsix, tmp_path, FIRST_RUN)


def run_suite(code_server: CodeServer, vsix: Path, tmp_path: Path, scenarios: Path) -> Path:
    """Run the steps of ``scenarios`` (a file in editors/vscode/e2e) in code-server with
    ``vsix`` installed; every step must pass. Returns the artifacts folder."""
    node, _npm, why = find_extension_node()
    if node is None:
        missing_toolchain(why)
    artifacts = tmp_path / "artifacts"
    print(f"screenshots and logs: {artifacts}")
    config = {
        "node": str(code_server.node),
        "codeServer": str(code_server.entry),
        "modules": str(code_server.modules),
        "chromium": CHROMIUM,
        "vsix": str(vsix),
        "agentHost": agent_host_executable(),
        "work": str(tmp_path / "work"),
        "artifacts": str(artifacts),
        "scenarios": str(scenarios),
    }
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"}
    try:
        done = subprocess.run(
            [str(code_server.node), str(E2E), str(config_file)],
            capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the suite took over 900 s; its output:\n{exc.stdout!r}\n{exc.stderr!r}")
    out = done.stdout
    print(out)
    passed = re.findall(r"^ok - (.+?) \(\d+\.\d s\)$", out, re.M)
    failed = re.findall(r"^not ok - .*", out, re.M)
    assert not failed and done.returncode == 0, (
        f"{failed}\n{out[-8000:]}\n{done.stderr[-4000:]}\nartifacts: {artifacts}"
    )
    assert passed == step_names(scenarios), f"steps run: {passed}\n{out[-8000:]}"
    return artifacts
