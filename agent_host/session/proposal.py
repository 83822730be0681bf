"""What an edit tool would do, for its permission prompt: the file's text before
and after (the tool's preview) and a unified diff of the two."""

from __future__ import annotations

import asyncio
import difflib
import logging

from .approval import PermissionRequest
from .errors import AgentHostError
from .limits import MAX_FILE_BYTES
from .tools import tool_named
from .workspace import Workspace

log = logging.getLogger(__name__)

DIFF_MAX_CHARS = 1 << 20
"""An edit's permission prompt shows no diff past this size (old and new together)."""


async def propose(request: PermissionRequest, workspace: Workspace) -> None:
    """What an edit tool would do, for the permission prompt: the file's text
    before and after (the tool's preview) and a unified diff of the two."""
    tool = tool_named(request.tool)
    args = request.arguments
    path = args.get("path")
    if tool is None or tool.preview is None or not isinstance(path, str):
        return
    try:
        old_bytes = await workspace.read_bytes(path, limit=MAX_FILE_BYTES)
    except (AgentHostError, OSError) as exc:  # the tool call will report it; ask without a diff
        log.info("no diff in the permission prompt for %s of %r: %s", request.tool, path, exc)
        return
    try:
        request.before = None if old_bytes is None else old_bytes.decode("utf-8")
    except UnicodeDecodeError:
        pass  # not text: no side-by-side view, but a diff of what it would be
    old = (old_bytes or b"").decode("utf-8", "replace")
    new = tool.preview(args, old if old_bytes is not None else None)
    if new is None:
        return
    if request.before is not None or old_bytes is None:
        request.after = new
    if len(old) + len(new) > DIFF_MAX_CHARS:
        return None  # difflib on megabytes takes seconds; the prompt goes without

    def diff() -> str:
        lines = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
        return "".join(lines)

    request.diff = await asyncio.to_thread(diff)
