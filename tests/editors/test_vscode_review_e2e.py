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

from pathlib import Path

import pytest

from .code_server import CodeServer
from .test_vscode import EXTENSION
from .test_vscode_e2e import run_suite

REVIEW = EXTENSION / "e2e" / "review.mjs"


@pytest.mark.timeout(1800)
def test_review_and_preview_in_code_server(
    code_server: CodeServer,
    vsix: Path,
    tmp_path: Path,
) -> None:
    artifacts = run_suite(code_server, vsix, tmp_path, REVIEW)
    shots = {p.name for p in artifacts.glob("*.png")}
    for view in ("review-changes", "restore-preview"):
        assert any(view in name for name in shots), f"no {view} screenshot in {sorted(shots)}"
