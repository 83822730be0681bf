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


# ---------------------------------------------------------------------------
# Plain-JSON clients: results, events and permission requests arrive as dicts
# (pygls's default turns them into namedtuples). Used by test_methods.py,
# test_bad_requests.py and test_two_servers.py; `client` above is unchanged.

SERVER_COMMAND = [sys.executable, "-m", "agent_host", "serve"]


def plain_converter():
    """pygls's client converter, but untyped messages keep their JSON as dicts."""
    from pygls.protocol import (
        JsonRPCNotification,
        JsonRPCRequestMessage,
        JsonRPCResponseMessage,
        default_converter,
    )

    converter = default_converter()

    def keep(obj, cls):
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


async def start_agent(
    *,
    root,
    store,
    model: str,
    approval: str = "auto",
    work_done_progress: bool = True,
    permission=None,
    options: dict | None = None,
    folders=None,
    apply_edit: bool = False,
) -> LanguageClient:
    """A running, initialized ``agent-host serve`` driven by a plain-JSON client.

    ``client.trace`` records, in arrival order, every ``session/event`` as
    ("event", params) and every permission request as ("permission", params);
    ``client.events`` holds the event params alone. ``permission`` answers
    ``session/requestPermission`` (params -> decision string); default allow_once.
    ``folders``: the workspaceFolders the client opens (the server's roots, in order).
    ``apply_edit``: the client offers workspace/applyEdit (the server's workspace is
    then the editor's, buffer-aware).
    """
    from pytest_lsp.client import register_lsp_features

    client = LanguageClient(converter_factory=plain_converter)
    register_lsp_features(client)
    client.trace = []
    client.events = []
    client.permission_requests = []

    @client.feature("session/event")
    def on_event(params):
        client.trace.append(("event", params))
        client.events.append(params)

    @client.feature("session/requestPermission")
    def on_permission(params):
        client.trace.append(("permission", params))
        client.permission_requests.append(params)
        return {"outcome": permission(params) if permission else "allow_once"}

    await client.start_io(*SERVER_COMMAND)
    capabilities = lsp.ClientCapabilities(
        window=lsp.WindowClientCapabilities(work_done_progress=work_done_progress),
        workspace=lsp.WorkspaceClientCapabilities(apply_edit=True) if apply_edit else None,
    )
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities,
            root_uri=root.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(f.as_uri(), f.name) for f in folders]
            if folders
            else None,
            initialization_options={
                "store": str(store),
                "model": model,
                "approval": approval,
                **(options or {}),
            },
        )
    )
    return client


async def stop_agent(client: LanguageClient, timeout: float = 10.0) -> None:
    """shutdown + exit; a server that does not go is killed (never hangs the suite)."""
    import asyncio
    import contextlib

    process = client._server
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.shutdown_session(), timeout)
    if process is not None and process.returncode is None:
        process.kill()
        await process.wait()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.stop(), timeout)


async def request(client: LanguageClient, method: str, params=None, timeout: float = 30.0):
    """One request; the result as plain JSON (JsonRpcException on an error response)."""
    import asyncio

    return await asyncio.wait_for(client.protocol.send_request_async(method, params), timeout)


@pytest.fixture
def store_dir(tmp_path):
    """The file store the plain-JSON servers share (a folder)."""
    return tmp_path / "store"


@pytest.fixture
async def agent(tmp_path, workspace, store_dir, steps):
    """A plain-JSON client on a server with approval "auto" and the ``steps`` script."""
    model = write_script(tmp_path / "script.json", steps)
    client = await start_agent(root=workspace, store=store_dir, model=model)
    yield client
    await stop_agent(client)


@pytest.fixture
async def agents(tmp_path, workspace, store_dir):
    """Start servers on demand: ``await agents(steps, approval=..., ...)``.

    Every server shares ``workspace`` and ``store_dir`` unless told otherwise, and
    each is shut down (or killed) at teardown.
    """
    started: list[LanguageClient] = []

    async def start(steps, **options) -> LanguageClient:
        options.setdefault("root", workspace)
        options.setdefault("store", store_dir)
        model = write_script(tmp_path / f"script-{len(started)}.json", steps)
        client = await start_agent(model=model, **options)
        started.append(client)
        return client

    yield start
    for client in started:
        await stop_agent(client)


async def wait_until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)
