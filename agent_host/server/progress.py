"""Work-done progress around a long request (a turn, a compaction), when the client
supports it; a turn's progress is cancellable, and cancelling it cancels the turn."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from .app import AgentServer

log = logging.getLogger(__name__)


class progress:
    """``async with progress(server, title, session_id)``: begin ... end."""

    def __init__(self, server: AgentServer, title: str, session_id: str | None = None) -> None:
        self.server = server
        self.title = title
        self.session_id = session_id
        self.token: str | None = None

    async def __aenter__(self) -> None:
        if not self.server.client_supports("window", "work_done_progress"):
            return
        token = str(uuid.uuid4())
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception as exc:  # the client refused a token: go on without progress
            log.debug("no work-done progress: %s", exc)
            return
        self.token = token
        cancellable = self.session_id is not None
        if cancellable:
            self.server.progress_sessions[token] = self.session_id  # type: ignore[assignment]
        self.server.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title=self.title, cancellable=cancellable)
        )

    async def __aexit__(self, *exc: object) -> None:
        if self.token is not None:
            self.server.progress_sessions.pop(self.token, None)
            self.server.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd())
