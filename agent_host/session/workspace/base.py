"""The :class:`Workspace` protocol tools and restore go through, and :class:`CommandResult`.

Tools read, write and run commands only through a :class:`Workspace`, so the same
tools work on plain folders (:class:`~.disk.DiskWorkspace`, for the CLI and CI) and
inside an editor, where an ``EditorWorkspace`` sends writes through LSP
``workspace/applyEdit`` so they land in open buffers. The protocol is kept small
and async for that reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import attrs


@attrs.define
class CommandResult:
    exit_code: int | None
    """The shell's exit status; negative for a signal; None when it timed out."""
    output: str
    """stdout and stderr as they interleaved, cut in the middle if too long."""
    timed_out: bool = False
    truncated: bool = False


class Workspace(Protocol):
    roots: list[Path]
    """Absolute, symlink-free folders; the first one is where relative paths start."""

    def resolve(self, path: str) -> Path:
        """The real path of ``path``; PathOutsideWorkspace if it is outside the roots."""
        ...

    def relative(self, path: Path) -> str:
        """The display path events and tool output use for ``path``."""
        ...

    async def read_bytes(self, path: str) -> bytes | None:
        """The file's content, None if it does not exist; ToolError for a directory."""
        ...

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the file's content atomically, creating parent directories."""
        ...

    async def delete(self, path: str) -> None:
        """Remove the file; a file that does not exist is fine."""
        ...

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        """Up to ``limit`` display paths, sorted, minus what .gitignore excludes."""
        ...

    async def run_command(
        self, command: str, timeout: float = 120.0, max_output: int = 30_000
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` in the first root."""
        ...
