"""A view of a workspace in which relative paths start at one chosen root.

A session logs its files relative to the first root of the workspace it was
started in (:func:`~.paths.relative_in_roots`). A server opened later with the
same folders in another order would resolve those paths against another folder,
so every operation of the session -- its turns' tools and commands, restore and
undo -- looks at the workspace through this view, whose first root is the
session's own.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from ..limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT
from .base import CommandResult, IfContent, Workspace
from .paths import relative_in_roots


def rooted_at(workspace: Workspace, root: Path) -> Workspace:
    """``workspace`` with relative paths starting at ``root``, one of its roots."""
    if root not in workspace.roots:
        raise ValueError(f"{root} is not a root of {workspace!r}")
    if workspace.roots[0] == root:
        return workspace
    return RootedWorkspace(workspace, root)


class RootedWorkspace:
    """Every path given is taken relative to ``root`` (an absolute one as it is),
    and handed to the workspace underneath as an absolute path; the paths it shows
    are relative to ``root``, and commands run in ``root``."""

    def __init__(self, inner: Workspace, root: Path) -> None:
        self.inner = inner
        self.roots: list[Path] = [root, *(r for r in inner.roots if r != root)]

    def __repr__(self) -> str:
        return f"RootedWorkspace({self.inner!r}, at {self.roots[0]})"

    def _at(self, path: str) -> str:
        # join keeps an absolute path as it is; an empty one is left to the
        # workspace to refuse.
        return os.path.join(self.roots[0], path) if path else path

    def resolve(self, path: str) -> Path:
        return self.inner.resolve(self._at(path))

    def relative(self, path: Path) -> str:
        return relative_in_roots(self.roots, path)

    async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        return await self.inner.read_bytes(self._at(path), limit=limit)

    async def read_disk(self, path: str, *, limit: int | None = None) -> bytes | None:
        return await self.inner.read_disk(self._at(path), limit=limit)

    async def read_range(self, path: str, start: int, size: int) -> bytes | None:
        return await self.inner.read_range(self._at(path), start, size)

    async def buffer_text(self, path: str) -> str | None:
        return await self.inner.buffer_text(self._at(path))

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        buffer: str | None = None,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        await self.inner.write_bytes(
            self._at(path), data, buffer=buffer, expect=expect, executable=executable
        )

    async def delete(
        self, path: str, *, buffer: str | None = None, expect: IfContent | None = None
    ) -> None:
        await self.inner.delete(self._at(path), buffer=buffer, expect=expect)

    def batch_writes(self) -> AbstractAsyncContextManager[None]:
        return self.inner.batch_writes()

    async def discard_partial_writes(self, path: str) -> None:
        await self.inner.discard_partial_writes(self._at(path))

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        # A pattern matches root-relative paths in every root alike, so the listing
        # underneath finds the same files; only their display paths differ, and so
        # does their order: the whole listing is taken to cut it at ``limit`` here.
        listed = await self.inner.list_files(pattern, limit=sys.maxsize)
        first = self.inner.roots[0]
        shown = {self.relative(Path(os.path.join(first, path))) for path in listed}
        return sorted(shown)[: max(limit, 0)]

    async def run_command(
        self,
        command: str,
        timeout: float = COMMAND_DEFAULT_TIMEOUT,
        max_output: int = COMMAND_MAX_OUTPUT,
        *,
        cwd: Path | None = None,
    ) -> CommandResult:
        return await self.inner.run_command(
            command, timeout, max_output, cwd=self.roots[0] if cwd is None else cwd
        )
