"""A real `agent-host serve` process driven over stdio by pytest-lsp's client."""

from __future__ import annotations

import json
import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient


def write_script(path, steps) -> str:
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("print('a')\n")
    return root


@pytest.fixture
def steps():
    """The scripted model's steps; tests override this fixture."""
    return [{"text": "Hello from the script."}]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "agent_host", "serve"]),
)
async def client(lsp_client: LanguageClient, tmp_path, workspace, steps):
    model = write_script(tmp_path / "script.json", steps)
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(
                window=lsp.WindowClientCapabilities(work_done_progress=True),
                workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
            ),
            root_uri=workspace.as_uri(),
            initialization_options={
                "store": str(tmp_path / "store"),
                "model": model,
                "approval": "auto",
            },
        )
    )
    yield
    await lsp_client.shutdown_session()
