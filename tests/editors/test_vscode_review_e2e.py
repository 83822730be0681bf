"""Seeing before trusting, in a real VS Code (issue 25): the steps of
editors/vscode/e2e/review.mjs on their own code-server workbench, as
test_vscode_e2e.py runs scenarios.mjs -- an agent edit highlighted in the open
editor, the chat's changed-file links and Review Changes (the multi-file changes
editor), Keep / Undo of one file, Review Changes… since a checkpoint, and the
restore preview (counts, a conflict and its Compare, unticked files left alone,
the restore writing what the preview showed).

Screenshots of the review and the preview are in the artifacts folder the test
prints (docs/images/ holds two of them). Skips without the toolchain, like the
main suite (fails with AGENT_HOST_REQUIRE_EDITORS=1).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from .code_server import CHROMIUM, CodeServer, code_server  # noqa: F401 (a fixture)
from .test_vscode import EXTENSION, missing_toolchain
from .test_vscode import find_node as find_extension_node
from .test_vscode_e2e import E2E, agent_host_executable, vsix  # noqa: F401 (a fixture)

REVIEW = EXTENSION / "e2e" / "review.mjs"


def review_steps() -> list[str]:
    """The steps review.mjs declares, in order."""
    found = re.findall(r"^    \[\n        (['\"])(.+?)\1,$", REVIEW.read_text(), re.M)
    return [name for _quote, name in found]


@pytest.mark.timeout(1800)
def test_review_and_preview_in_code_server(
    code_server: CodeServer,  # noqa: F811 (the fixture)
    vsix: Path,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
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
        "scenarios": str(REVIEW),
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
    assert passed == review_steps(), f"steps run: {passed}\n{out[-8000:]}"
    shots = {p.name for p in artifacts.glob("*.png")}
    for view in ("review-changes", "restore-preview"):
        assert any(view in name for name in shots), f"no {view} screenshot in {sorted(shots)}"
