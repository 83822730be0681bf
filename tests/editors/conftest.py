"""Fixtures shared by the editor tests: the Neovim to run (see neovim_harness.py)."""

from __future__ import annotations

import pytest

from .neovim_harness import find_nvim, missing_editor


@pytest.fixture(scope="module")
def nvim() -> str:
    found, reason = find_nvim()
    if found is None:
        missing_editor(reason)
    assert found is not None
    return found
