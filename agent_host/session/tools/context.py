"""What a tool is given to act through, and what it gives back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs

from ..workspace import CommandResult, Workspace


@attrs.define
class ToolContext:
    workspace: Workspace
    change_file: Callable[[str, bytes | None], Awaitable[None]]
    """Change one file: ``(path, new content)``, ``None`` to delete it.

    The engine's implementation stores the before and after content as blobs and
    appends a FileSnapshot event *before* it writes through the workspace, so a
    crash mid-write still leaves the change in the log. Tools pass the
    workspace's display path (:meth:`Workspace.relative`), so one file always
    has one name in events however the model spelled it.
    """
    run_command: Callable[[str, float, int], Awaitable[CommandResult]] | None = None
    """Run a shell command: ``(command, timeout, max_output)``. The engine's
    captures what the command changed in the workspace; None runs it through the
    workspace directly."""
    sandbox_exit: SandboxExit | None = None
    """Asks the user to run a command the sandbox stopped without it (None: the
    way out is closed, as outside a host's turn)."""


class SandboxExit(Protocol):
    def remembered(self, command: str) -> bool:
        """Whether the user said to always run ``command`` without the sandbox."""
        ...

    async def ask(self, command: str, denial: str) -> bool:
        """Whether the user approves running ``command`` without the sandbox now."""
        ...


@attrs.define
class ToolOutcome:
    output: str
    is_error: bool = False
    unconfined: bool = False
    """It ran something outside the sandbox (see :class:`~..events.ToolResult`)."""


def display_path(ctx: ToolContext, path: str) -> str:
    """The name events and output use for ``path``; PathOutsideWorkspace if outside."""
    return ctx.workspace.relative(ctx.workspace.resolve(path))
