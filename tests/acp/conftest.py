"""A real `agent-host acp` process driven over stdio by the official SDK's client."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema as s


class RecordingClient:
    """An ACP client that records every session/update and answers permission
    requests with ``answer`` (None: the client errs instead)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[s.ToolCallUpdate] = []
        self.answer: str | None = "allow_once"

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self, session_id: str, tool_call: s.ToolCallUpdate, options: list, **kwargs: Any
    ) -> s.RequestPermissionResponse:
        self.permissions.append(tool_call)
        if self.answer is None:
            raise acp.RequestError(-32603, "the test client cannot answer")
        outcome = s.AllowedOutcome(outcome="selected", option_id=self.answer)
        return s.RequestPermissionResponse(outcome=outcome)

    def of(self, kind: str, session_id: str | None = None) -> list[Any]:
        """The updates of one kind (``agent_message_chunk``, ``tool_call`` ...)."""
        return [
            u
            for sid, u in self.updates
            if u.session_update == kind and (session_id is None or sid == session_id)
        ]

    def text(self, session_id: str | None = None) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk", session_id))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("print('a')\n")
    return root


Spawn = Callable[..., Any]


@pytest.fixture
def spawn(tmp_path: Path, workspace: Path) -> Spawn:
    """``async with spawn(steps, "--approval", "auto") as (conn, client)``: an
    initialized agent on the scripted model, over the test's one store; with
    ``client`` (a RecordingClient) and the ``capabilities`` and ``meta`` (``_meta``)
    it initializes with; ``env`` is added to the agent's environment."""
    script = tmp_path / "script.json"

    @asynccontextmanager
    async def start(
        steps: list[dict] | None = None,
        *args: str,
        client: RecordingClient | None = None,
        capabilities: s.ClientCapabilities | None = None,
        meta: dict | None = None,
        env: dict[str, str] | None = None,
    ) -> AsyncIterator[tuple[Any, RecordingClient]]:
        if steps is not None:
            script.write_text(json.dumps({"steps": steps}))
        client = client or RecordingClient()
        command = [
            "-m",
            "agent_host",
            "acp",
            "--model",
            f"scripted:{script}",
            "--store",
            str(tmp_path / "store"),
            *args,
        ]
        spawned = acp.spawn_agent_process(
            client,
            sys.executable,
            *command,
            cwd=workspace,
            env=env,  # over the SDK's small default environment, not os.environ
            transport_kwargs={"stderr": None},  # the agent's log goes to pytest's capture
            use_unstable_protocol=True,
        )
        try:
            async with spawned as (conn, process):
                await conn.initialize(
                    protocol_version=acp.PROTOCOL_VERSION,
                    client_capabilities=capabilities,
                    **(meta or {}),  # the client's _meta
                )
                yield conn, client
        except ProcessLookupError:
            # The SDK waits 2 s for the agent to exit after closing its stdin, then
            # terminates it; on a loaded machine the exit is reaped after the wait and
            # terminate() finds no process. An agent that exited is what we wanted.
            if process.returncode is None:
                raise

    return start


async def new_session(conn: Any, workspace: Path) -> str:
    return (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id


async def say(conn: Any, session_id: str, text: str) -> s.PromptResponse:
    return await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])


def results(client: RecordingClient, session_id: str) -> list[str]:
    """The text of each finished tool call's output, in order."""
    return [
        u.content[-1].content.text
        for u in client.of("tool_call_update", session_id)
        if u.status in ("completed", "failed")
    ]
