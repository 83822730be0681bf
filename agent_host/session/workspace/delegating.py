"""A workspace that is the disk's but for what a client shows: the base of the LSP
front end's EditorWorkspace and ACP's ClientWorkspace.

A subclass overrides the calls its client takes part in (reads of open buffers,
writes that reach them, commands in the client's terminal); every other call is the
DiskWorkspace's, unchanged. It also reports the open buffers an operation could not
bring to their new content, per operation: :func:`unsynced_buffers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path

from .base import CommandResult, IfContent
from .disk import DiskWorkspace


class DelegatingWorkspace:
    def __init__(self, disk: DiskWorkspace) -> None:
        self.disk = disk
        self.roots: list[Path] = disk.roots
        self._unsynced: dict[str, str] | None = None
        """While an operation collects them: display path -> why its buffer lags."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({[str(r) for r in self.roots]})"

    @property
    def editor_writes(self) -> bool:
        """Whether writes of text are the editor's to make (it may normalise or
        refuse them), not the disk's: the engine then reads back what landed."""
        return False

    # -- the disk's

    def resolve(self, path: str) -> Path:
        return self.disk.resolve(path)

    def relative(self, path: Path) -> str:
        return self.disk.relative(path)

    async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        return await self.disk.read_bytes(path, limit=limit)

    async def read_disk(self, path: str, *, limit: int | None = None) -> bytes | None:
        return await self.disk.read_bytes(path, limit=limit)

    async def read_range(self, path: str, start: int, size: int) -> bytes | None:
        return await self.disk.read_range(path, start, size)

    async def buffer_text(self, path: str) -> str | None:
        return None

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        buffer: str | None = None,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        await self.disk.write_bytes(path, data, expect=expect, executable=executable)

    async def delete(
        self, path: str, *, buffer: str | None = None, expect: IfContent | None = None
    ) -> None:
        await self.disk.delete(path, expect=expect)

    def batch_writes(self) -> AbstractAsyncContextManager[None]:
        return self.disk.batch_writes()

    async def discard_partial_writes(self, path: str) -> None:
        await self.disk.discard_partial_writes(path)

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        return await self.disk.list_files(pattern, limit)

    async def run_command(
        self,
        command: str,
        timeout: float = 120.0,
        max_output: int = 30_000,
        *,
        cwd: Path | None = None,
    ) -> CommandResult:
        return await self.disk.run_command(command, timeout, max_output, cwd=cwd)

    # -- buffers an operation left behind

    @property
    def collecting(self) -> bool:
        """Whether an operation (a restore, an undo) is collecting lagging buffers:
        they go into its result instead of a message to the user."""
        return self._unsynced is not None

    def unsynced(self, shown: str, reason: str) -> bool:
        """Note that the buffer of ``shown`` lags; False when no operation collects."""
        if self._unsynced is None:
            return False
        self._unsynced[shown] = reason
        return True

    def synced(self, shown: str) -> None:
        """The buffer of ``shown`` caught up after all."""
        if self._unsynced is not None:
            self._unsynced.pop(shown, None)


@contextmanager
def unsynced_buffers(workspace: object) -> Iterator[Callable[[], list[str]]]:
    """Collect, for the block, the open buffers ``workspace`` could not bring to their
    new content; yields a function giving their display paths (none for a
    workspace without buffers). The session's one operation at a time keeps the
    collection its own."""
    if not isinstance(workspace, DelegatingWorkspace):
        yield list
        return
    outer = workspace._unsynced
    found: dict[str, str] = {}
    workspace._unsynced = found
    try:
        yield lambda: list(found)
    finally:
        workspace._unsynced = outer
