"""The client port: the engine's only way to reach the user, one per front end.

A front end (the LSP server, the ACP agent) implements it; the session service
hands it to the engine. What a turn reports is one of the ``Update`` types, never
an untyped object.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

import attrs

from ..session import events as ev
from ..session.approval import Decision, PermissionRequest
from ..session.compaction import CompactionProgress
from ..session.model import ModelWait, TextDelta
from ..session.workspace import Workspace

if TYPE_CHECKING:
    from ..session.mcp import McpServerStatus


@attrs.frozen
class SessionChanged:
    """Another process or host changed a session this server holds (a shared store
    told it): appended to it, cut it back, or deleted it (``head`` 0). The client may
    reload what it shows; this server's next action on the session reads it anew."""

    head: int


Update: TypeAlias = (
    "TextDelta | ev.Event | CompactionProgress | McpServerStatus | ModelWait | SessionChanged"
)
"""What a running turn, compaction or restore tells the client: streamed text, an
event as it is appended to the log, a compaction's progress, an MCP server's news,
a model call still waiting for its answer or about to retry (not logged);
and, between turns, a change another host made (SessionChanged)."""


class ClientPort(Protocol):
    async def update(self, session_id: str, update: Update) -> None:
        """Something happened in the session; called in log order."""

    async def request_permission(self, request: PermissionRequest) -> Decision:
        """May the agent run this tool call? A client that cannot answer rejects."""

    def workspace(self, roots: list[Path], session_id: str | None = None) -> Workspace:
        """The workspace a session of ``roots`` acts through (``session_id``; None:
        the folder's, for what no session does): the disk, or the editor's buffers,
        edits and terminals where the client offers them, for that session."""
