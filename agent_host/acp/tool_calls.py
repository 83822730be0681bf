"""The tool calls of running turns as ACP shows them: started, their diffs, done.

A turn logs a model step's tool calls together, then runs them one by one, in
order; so the call a file snapshot or a permission request belongs to is the first
of its session still open. What a call changed is shown as diff content (the
before and after text, from the snapshot's blobs) next to its output.
"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
from acp import schema as s

from ..session import events as ev
from ..session.approval import PermissionRequest
from ..session.blobs import BlobStore
from ..session.errors import AgentHostError
from ..session.workspace import Workspace
from . import convert

log = logging.getLogger(__name__)

DIFF_LIMIT = 1_000_000
"""Bytes: a file larger than this (before or after) is not shown as a diff."""

Content = s.ContentToolCallContent | s.FileEditToolCallContent | s.TerminalToolCallContent


@attrs.define
class OpenCall:
    call: ev.ToolCall
    content: list[Content] = attrs.field(factory=list)


@attrs.define
class ToolCalls:
    blobs: BlobStore
    _open: dict[str, list[OpenCall]] = attrs.field(factory=dict)
    """By session: calls logged and not yet answered by a result, in order."""

    def started(self, session_id: str, call: ev.ToolCall, root: Path) -> s.ToolCallStart:
        self._open.setdefault(session_id, []).append(OpenCall(call))
        return convert.tool_call_start(call, root)

    async def changed(
        self, session_id: str, snapshot: ev.FileSnapshot, root: Path
    ) -> s.ToolCallProgress | None:
        """The running call's diff of a file it changed; None if no call is running
        (a restore's jumps) or the file is not text."""
        current = self.current(session_id)
        if current is None or snapshot.jump:
            return None
        before = await self._text(snapshot.before)
        after = await self._text(snapshot.after) if snapshot.after else ""
        if not isinstance(before, str | None) or not isinstance(after, str):
            return None  # binary, too large or unreadable (_BINARY), or no after
        current.content.append(convert.diff_content(root, snapshot.path, before, after))
        return s.ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=current.call.call_id,
            status="in_progress",
            content=list(current.content),
        )

    def terminal(self, session_id: str, terminal_id: str) -> s.ToolCallProgress | None:
        """The running call (a run_command) with the client terminal it runs in."""
        current = self.current(session_id)
        if current is None:
            return None
        current.content.append(s.TerminalToolCallContent(type="terminal", terminal_id=terminal_id))
        return s.ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=current.call.call_id,
            status="in_progress",
            content=list(current.content),
        )

    def finished(self, session_id: str, result: ev.ToolResult) -> s.ToolCallProgress:
        calls = self._open.get(session_id, [])
        found = next((c for c in calls if c.call.call_id == result.call_id), None)
        if found is not None:
            calls.remove(found)
        if not calls:
            self._open.pop(session_id, None)
        return convert.tool_call_done(result, found.content if found else ())

    def forget(self, session_id: str) -> None:
        """A turn that ended leaves no call open (a cancel cuts its calls short)."""
        self._open.pop(session_id, None)

    def current(self, session_id: str) -> OpenCall | None:
        calls = self._open.get(session_id)
        return calls[0] if calls else None

    async def permission_call(
        self, request: PermissionRequest, workspace: Workspace
    ) -> s.ToolCallUpdate:
        """The tool call a permission request is about, with the change it proposes."""
        open_call = self._matching(request)
        call_id = open_call.call.call_id if open_call else f"permission-{id(request)}"
        root = workspace.roots[0]
        content = _proposed(request, root)
        title = convert.tool_title(request.tool, request.arguments)
        if request.sandbox_denial is not None:
            # The same call, asked about again: its run in the sandbox failed.
            title = f"Run without the sandbox: {title}"
            content = [
                convert.text_content(
                    f"The sandbox stopped this command: {request.sandbox_denial}. "
                    "Allowing runs it again without the sandbox."
                )
            ]
        return s.ToolCallUpdate(
            tool_call_id=call_id,
            title=title,
            kind=convert.tool_kind(request.tool),
            status="pending",
            content=content,
            locations=convert.locations(request.arguments, root),
            raw_input=request.arguments,
        )

    def _matching(self, request: PermissionRequest) -> OpenCall | None:
        calls = self._open.get(request.session_id, [])
        return next((c for c in calls if c.call.call_id == request.call_id), None)

    async def _text(self, blob: str | None) -> str | None | object:
        if blob is None:
            return None
        try:
            data = await self.blobs.get(blob)
        except (AgentHostError, OSError) as exc:
            log.warning("cannot read snapshot %s for a diff: %s", blob, exc)
            return _BINARY
        if len(data) > DIFF_LIMIT:
            return _BINARY
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return _BINARY


_BINARY = object()
"""Content not shown as text: binary, too large or unreadable."""


def _proposed(request: PermissionRequest, root: Path) -> list[Content] | None:
    """The edit as a diff (the file's text before and after, as the engine's preview
    computed it), else the engine's unified diff as text."""
    path = request.arguments.get("path")
    if request.kind != "edit" or not isinstance(path, str):
        return None
    if request.after is not None:
        return [convert.diff_content(root, path, request.before, request.after)]
    return [convert.text_content(request.diff)] if request.diff else None
