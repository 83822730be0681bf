"""The gates: ruff's lint and format check, and mypy with no errors on agent_host.

They are tests, not steps of .ci/run, so the README's one test command (which .ci/run
runs) is the whole of CI, and a developer's ``pytest`` fails where CI would. ruff
and mypy come with the ``test`` extra, at the versions whose verdict this holds;
their settings are in pyproject.toml, so each gate is the plain command below.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_gate(*command: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=550
    )
    if run.returncode != 0:
        pytest.fail(f"`{' '.join(command)}` failed:\n{run.stdout}{run.stderr}", pytrace=False)


def test_ruff_check():
    run_gate("ruff", "check")


def test_ruff_format_check():
    run_gate("ruff", "format", "--check")


@pytest.mark.slow  # about a minute from a cold cache (.mypy_cache), seconds after
@pytest.mark.timeout(600)
def test_mypy():
    run_gate("mypy", "agent_host")
