"""Fixtures the engine's tests share: a workspace folder and one outside it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace folder, symlinks resolved."""
    r = tmp_path / "ws"
    r.mkdir()
    return r.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace, with a file no tool may reach."""
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("secret")
    return o.resolve()
