"""DiskWorkspace: a :class:`~.base.Workspace` over plain folders, with atomic file writes."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from ..durable import fsync_dir, write_atomically
from ..errors import ToolError
from .base import CommandResult
from .listing import list_in_roots
from .paths import relative_in_roots, resolve_in_roots
from .shell import run_shell


class DiskWorkspace:
    """A :class:`~.base.Workspace` over plain folders on this machine."""

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        if not roots:
            raise ValueError("a workspace needs at least one root folder")
        resolved = []
        for root in roots:
            real = Path(os.path.realpath(root))
            if not real.is_dir():
                raise NotADirectoryError(f"workspace root {root} is not a directory")
            resolved.append(real)
        self.roots: list[Path] = resolved

    def __repr__(self) -> str:
        return f"DiskWorkspace({[str(r) for r in self.roots]})"

    def resolve(self, path: str) -> Path:
        return resolve_in_roots(self.roots, path)

    def relative(self, path: Path) -> str:
        return relative_in_roots(self.roots, path)

    async def read_bytes(self, path: str) -> bytes | None:
        real = self.resolve(path)
        return await asyncio.to_thread(_read_file, real, path)

    async def read_disk(self, path: str) -> bytes | None:
        return await self.read_bytes(path)

    async def buffer_text(self, path: str) -> str | None:
        return None  # no editor: no buffers

    async def write_bytes(self, path: str, data: bytes, *, buffer: str | None = None) -> None:
        # ``buffer`` is for editor buffers; there are none here.
        real = self.resolve(path)
        await asyncio.to_thread(_write_atomic, real, bytes(data), path)

    async def delete(self, path: str, *, buffer: str | None = None) -> None:
        real = self.resolve(path)
        await asyncio.to_thread(_delete_file, real, path)

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        return await asyncio.to_thread(list_in_roots, self.roots, pattern, limit)

    async def run_command(
        self, command: str, timeout: float = 120.0, max_output: int = 30_000
    ) -> CommandResult:
        return await run_shell(command, self.roots[0], timeout, max_output)


def _stat(real: Path) -> os.stat_result | None:
    try:
        return os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _check_regular(st: os.stat_result, shown: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        # Reading a FIFO would block forever; devices and sockets are not files either.
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device)")


def _read_file(real: Path, shown: str) -> bytes | None:
    st = _stat(real)
    if st is None:
        return None
    _check_regular(st, shown)
    try:
        with open(real, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_atomic(real: Path, data: bytes, shown: str) -> None:
    st = _stat(real)
    if st is not None:
        _check_regular(st, shown)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"cannot create {shown}: a parent of it is a file, not a folder") from None
    kept_mode = None if st is None else stat.S_IMODE(st.st_mode)
    write_atomically(real, data, exact_mode=kept_mode, dir_sync_best_effort=True)


def _delete_file(real: Path, shown: str) -> None:
    st = _stat(real)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory; only files can be deleted")
    with suppress(FileNotFoundError):
        os.unlink(real)
    fsync_dir(real.parent, best_effort=True)
