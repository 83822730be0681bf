"""The ACP front end's client port: how the engine reaches the editor.

Engine updates become ``session/update`` notifications, sent in log order before
the prompt they belong to is answered; permission asks become
``session/request_permission``. A client that errs, hangs up or cancels the
request rejects the call, never approves it. Sessions work through a
:class:`~.client_files.ClientWorkspace`: the client's files and terminal where
its capabilities offer them, else the disk.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from acp import Client
from acp import schema as s
from acp.helpers import update_agent_message_text, update_agent_thought_text

from ..session import events as ev
from ..session.approval import Decision, PermissionRequest
from ..session.compaction import CompactionProgress
from ..session.model import ModelWait, TextDelta
from ..session.workspace import DiskWorkspace, Workspace
from .client_files import ClientWorkspace, FinalNewline
from .errors import CLIENT_FAILURES
from .tool_calls import ToolCalls

if TYPE_CHECKING:
    from ..service import SessionService, Update

log = logging.getLogger(__name__)

DECISIONS: tuple[Decision, ...] = get_args(Decision)
PERMISSION_OPTIONS = [
    s.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    s.PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    s.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    s.PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
]


class AcpPort:
    """``service.ClientPort`` over an ACP connection.

    ``conn`` is set when the SDK connects, ``service`` once the service that
    holds this port is made (each needs the other), ``client_capabilities`` at
    initialize (after the server folder's workspace was made: it reads them at
    call time).
    """

    def __init__(self) -> None:
        self.conn: Client | None = None
        self.service: SessionService | None = None
        self.client_capabilities: s.ClientCapabilities | None = None
        self._calls: ToolCalls | None = None
        self._disks: dict[tuple[str, ...], DiskWorkspace] = {}
        self.newline = FinalNewline()
        """What the client's writes do to a final newline: one client per connection."""

    @property
    def calls(self) -> ToolCalls:
        if self._calls is None:
            assert self.service is not None
            self._calls = ToolCalls(self.service.store.blobs)
        return self._calls

    def workspace(self, roots: list[Path], session_id: str | None = None) -> Workspace:
        """The session's own ClientWorkspace (its client requests name it) over the
        folder's disk; without a session, the disk's only."""
        key = tuple(str(r) for r in roots)
        disk = self._disks.get(key)
        if disk is None:
            disk = self._disks[key] = DiskWorkspace(roots)
        return ClientWorkspace(disk, self, session_id)

    async def terminal_started(self, session_id: str, terminal_id: str) -> None:
        """Show a running command's terminal in its tool call."""
        update = self.calls.terminal(session_id, terminal_id)
        if update is not None:
            await self.notify(session_id, update)

    def root(self, session_id: str) -> Path:
        """The folder the session runs in: tool paths are relative to it."""
        assert self.service is not None
        return self.service.held(session_id).roots[0]

    async def notify(self, session_id: str, update: Any) -> None:
        """One session/update; a client that hung up is logged, not raised into the
        turn (its log stays whole and the session resumable)."""
        if self.conn is None:
            return
        try:
            await self.conn.session_update(session_id=session_id, update=update)
        except ConnectionError:
            log.debug("session/update for %s dropped: the client hung up", session_id)

    async def update(self, session_id: str, update: Update) -> None:
        translated = await self._translate(session_id, update)
        if translated is not None:
            await self.notify(session_id, translated)

    async def _translate(self, session_id: str, update: Update) -> Any:
        if isinstance(update, TextDelta):
            return update_agent_message_text(update.text)
        if isinstance(update, ev.ToolCall):
            return self.calls.started(session_id, update, self.root(session_id))
        if isinstance(update, ev.FileSnapshot):
            return await self.calls.changed(session_id, update, self.root(session_id))
        if isinstance(update, ev.ToolResult):
            return self.calls.finished(session_id, update)
        if isinstance(update, ev.TurnEnd):
            self.calls.forget(session_id)
        elif isinstance(update, ev.Usage):
            return await self._usage(session_id, update)
        elif isinstance(update, CompactionProgress):
            # One line per compaction: its start says what; /compact's reply, the outcome.
            if update.stage != "started":
                return None
            return update_agent_thought_text(f"Compacting the conversation: {update.message}\n")
        elif isinstance(update, ModelWait):
            # A thought: every client shows it as the agent's, none keeps it as the answer.
            return update_agent_thought_text(f"{update.message}\n")
        elif type(update).__name__ == "McpServerStatus":
            # (by name: the MCP package stays unimported until a session uses it)
            return self._mcp_status(update)
        return None

    async def _usage(self, session_id: str, usage: ev.Usage) -> s.UsageUpdate:
        assert self.service is not None
        handle = self.service.held(session_id)
        total = await handle.session_cost()
        return s.UsageUpdate(
            session_update="usage_update",
            used=usage.input_tokens + usage.output_tokens,
            size=handle.host.context_window,
            cost=None if total is None else s.Cost(amount=total, currency="USD"),
        )

    def _mcp_status(self, status: Any) -> Any:
        if status.state in ("failed", "restarted"):
            log.warning("MCP server %s %s: %s", status.server, status.state, status.message)
            return update_agent_thought_text(
                f"MCP server {status.server} {status.state}: {status.message}\n"
            )
        log.info("MCP server %s %s: %s", status.server, status.state, status.message)
        return None

    async def request_permission(self, request: PermissionRequest) -> Decision:
        if self.conn is None:
            return "reject_once"
        assert self.service is not None
        workspace = self.service.held(request.session_id).workspace
        tool_call = await self.calls.permission_call(request, workspace)
        try:
            response = await self.conn.request_permission(
                session_id=request.session_id, tool_call=tool_call, options=PERMISSION_OPTIONS
            )
        except CLIENT_FAILURES as exc:
            log.warning("permission for %s: the client answered %s: rejected", request.tool, exc)
            return "reject_once"
        outcome = response.outcome
        if isinstance(outcome, s.AllowedOutcome) and outcome.option_id in DECISIONS:
            return outcome.option_id
        if getattr(outcome, "outcome", None) == "cancelled":
            # ACP: a client answers "cancelled" after it sent session/cancel, and the
            # prompt must end cancelled. The notification may not have been handled
            # yet (the SDK runs it in its own task): the turn ends here, as a cancel.
            raise asyncio.CancelledError
        return "reject_once"  # an option we did not offer
