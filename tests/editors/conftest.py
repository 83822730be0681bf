"""Fixtures shared by the editor tests: the Neovim to run (see neovim_harness.py), a
stalled model endpoint, the packaged VS Code extension and the code-server to run it in."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..session.providers.fakes import FakeServer, hang
from .code_server import CodeServer, install
from .neovim_harness import find_nvim, missing_editor
from .test_vscode import BUILD_OUTPUTS, EXTENSION, VSIX, find_node, missing_toolchain, run

STALLED_MODEL = "openai/gpt-4.1-mini"
STALL_LIMITS = {"AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT": "1", "AGENT_HOST_MODEL_RETRIES": "1"}
"""Limits for a stalled endpoint: each attempt waits 1 s for the answer to begin, and
is tried once more (about 2.5 s in all, the backoff included)."""
STALL_WALL = 30.0
"""Seconds the user may wait for the stall's error at STALL_LIMITS, from submitting
the prompt: the limits' 2.5 s and generous slack for a loaded machine."""


@pytest.fixture(scope="module")
def nvim() -> str:
    found, reason = find_nvim()
    if found is None:
        missing_editor(reason)
    assert found is not None
    return found


@pytest.fixture
def stalled_model() -> Iterator[FakeServer]:
    """A loopback endpoint speaking HTTP that accepts every request and never answers."""
    server = FakeServer([hang]).start()
    yield server
    server.stop()


def stalled_model_env(server: FakeServer) -> dict[str, str]:
    """The agent's environment for STALLED_MODEL at ``server``: a dummy key, the
    endpoint, the limits."""
    return {"OPENAI_API_KEY": "sk-test-x", "OPENAI_BASE_URL": server.url + "/v1", **STALL_LIMITS}


@pytest.fixture(scope="session")
def code_server() -> CodeServer:
    """code-server and the browser driver, installed once into the test cache."""
    return install()


@pytest.fixture(scope="session")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension packaged once per run (npm ci and vsce in a copy of
    editors/vscode), for every suite that installs it in code-server."""
    _node, npm, why = find_node()
    if npm is None:
        missing_toolchain(why)
    assert npm is not None
    work = tmp_path_factory.mktemp("vscode-e2e") / "vscode"
    shutil.copytree(EXTENSION, work, ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
    run(npm, ["ci", "--prefer-offline", "--no-audit", "--no-fund"], work, timeout=420)
    run(npm, ["run", "package"], work, timeout=300)
    return work / VSIX
