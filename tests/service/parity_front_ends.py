"""The two front ends the parity suite drives (tests/service/test_parity.py): a real
``agent-host serve`` and a real ``agent-host acp`` behind one :class:`FrontEnd` shape,
errors named by each dialect's own table."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import acp
import attrs
from acp import schema as s
from pygls.exceptions import JsonRpcException

from agent_host.acp import errors as acp_errors
from agent_host.server import protocol as lsp_protocol
from tests.acp.conftest import RecordingClient
from tests.server.conftest import request, start_agent, stop_agent


def names_of(table: dict[Any, int]) -> dict[int, str]:
    """A dialect's table of codes (error kind → code) read backwards: code → the
    kind's name, or the names of the kinds it stands for, joined, when several share
    it. A code outside the table (method not found ...) is named by its number."""
    names: dict[int, list[str]] = {}
    for kind, code in table.items():
        names.setdefault(int(code), []).append(kind.name)
    return {code: "|".join(sorted(found)) for code, found in names.items()}


# Each dialect's own table: the numbers may differ, the names compared may not.
LSP_NAMES = names_of(lsp_protocol.CODES)
ACP_NAMES = names_of(acp_errors.CODES)


OPERATIONS: dict[str, tuple[str, str]] = {
    # operation: (LSP dialect's method, ACP extension method)
    "checkpoints": ("session/checkpoints", "_agent-host/checkpoints"),
    "restore": ("session/restore", "_agent-host/restore"),
    "changes": ("session/changes", "_agent-host/changes"),
    "revertFiles": ("session/revertFiles", "_agent-host/revertFiles"),
    "undoRestore": ("session/undoRestore", "_agent-host/undoRestore"),
    "compact": ("session/compact", "_agent-host/compact"),
    "fork": ("session/fork", "_agent-host/fork"),
    "delete": ("session/delete", "_agent-host/delete"),
}


@attrs.frozen
class Failure:
    """An error answer, by kind: the name of its code in the dialect's table."""

    kind: str


class FrontEnd(Protocol):
    async def new(self, mcp_server: dict[str, Any] | None = None) -> str:
        """A new session; with ``mcp_server`` (ACP's McpServer JSON, which the LSP
        dialect takes too) its turns have that server's tools."""
        ...

    async def send(self, session_id: str, prompt: str) -> dict[str, Any] | Failure:
        """A turn: ``{"stopReason": ...}`` or the Failure."""
        ...

    async def call(self, operation: str, params: dict[str, Any]) -> Any:
        """An operation of OPERATIONS: its result as JSON, or the Failure."""
        ...

    def streamed(self, session_id: str) -> str:
        """The text the session's turns have streamed so far."""
        ...


class LspFrontEnd:
    def __init__(self, client: Any) -> None:
        self.client = client

    async def new(self, mcp_server: dict[str, Any] | None = None) -> str:
        params = {"mcpServers": [mcp_server]} if mcp_server else {}
        return str((await request(self.client, "session/new", params))["sessionId"])

    async def send(self, session_id: str, prompt: str) -> dict[str, Any] | Failure:
        try:
            done = await request(
                self.client, "session/send", {"sessionId": session_id, "prompt": prompt}
            )
        except JsonRpcException as exc:
            return Failure(LSP_NAMES.get(exc.code, str(exc.code)))
        return {"stopReason": done["stopReason"], "text": done["text"]}

    async def call(self, operation: str, params: dict[str, Any]) -> Any:
        try:
            result = await request(self.client, OPERATIONS[operation][0], params)
        except JsonRpcException as exc:
            return Failure(LSP_NAMES.get(exc.code, str(exc.code)))
        # session/delete answers null, ACP's extension {}: both "done, nothing to say".
        return {} if result is None else result

    def streamed(self, session_id: str) -> str:
        return "".join(
            e["data"]["text"]
            for e in self.client.events
            if e["sessionId"] == session_id and e["kind"] == "text_delta"
        )


class AcpFrontEnd:
    def __init__(self, conn: Any, client: RecordingClient, workspace: Path) -> None:
        self.conn = conn
        self.client = client
        self.workspace = workspace

    async def new(self, mcp_server: dict[str, Any] | None = None) -> str:
        servers = [s.McpServerStdio.model_validate(mcp_server)] if mcp_server else []
        response = await self.conn.new_session(cwd=str(self.workspace), mcp_servers=servers)
        return str(response.session_id)

    async def send(self, session_id: str, prompt: str) -> dict[str, Any] | Failure:
        seen = len(self.client.updates)
        try:
            done = await self.conn.prompt(session_id=session_id, prompt=[acp.text_block(prompt)])
        except acp.RequestError as exc:
            return Failure(ACP_NAMES.get(exc.code, str(exc.code)))
        # The turn's text streams as agent_message_chunk updates; the LSP dialect's
        # session/send also answers it whole. ACP names the engine's max_turns
        # max_turn_requests; the scenarios end their turns.
        streamed = "".join(
            u.content.text
            for sid, u in self.client.updates[seen:]
            if sid == session_id and u.session_update == "agent_message_chunk"
        )
        return {"stopReason": done.stop_reason, "text": streamed}

    async def call(self, operation: str, params: dict[str, Any]) -> Any:
        try:
            return await self.conn.ext_method(OPERATIONS[operation][1].removeprefix("_"), params)
        except acp.RequestError as exc:
            return Failure(ACP_NAMES.get(exc.code, str(exc.code)))

    def streamed(self, session_id: str) -> str:
        return self.client.text(session_id)


@asynccontextmanager
async def lsp_front_end(
    workspace: Path, store: Path, model: str, sandbox: str | None
) -> AsyncIterator[FrontEnd]:
    options = {"sandbox": sandbox} if sandbox else None
    client = await start_agent(root=workspace, store=store, model=model, options=options)
    try:
        yield LspFrontEnd(client)
    finally:
        await stop_agent(client)


@asynccontextmanager
async def acp_front_end(
    workspace: Path, store: Path, model: str, sandbox: str | None
) -> AsyncIterator[FrontEnd]:
    command = ["-m", "agent_host", "acp", "--model", model, "--store", str(store)]
    if sandbox:
        command += ["--sandbox", sandbox]
    client = RecordingClient()
    async with acp.spawn_agent_process(
        client,
        sys.executable,
        *command,
        "--approval",
        "auto",
        cwd=workspace,
        transport_kwargs={"stderr": None},
        use_unstable_protocol=True,
    ) as (conn, _process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        yield AcpFrontEnd(conn, client, workspace)


FRONT_ENDS = {"lsp": lsp_front_end, "acp": acp_front_end}
