"""DiskWorkspace: a :class:`~.base.Workspace` over plain folders, with atomic file writes
that a symlink swapped in mid-write cannot redirect."""

from __future__ import annotations

import asyncio
import contextvars
import errno
import os
import stat
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from ..blobs import blob_id
from ..environment import EnvironmentPolicy
from ..errors import FileChanged, FileTooLarge, PathChanged, PathOutsideWorkspace, ToolError
from ..limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT
from ..sandbox import Sandbox
from .base import CommandResult, IfContent
from .dirfd import (
    OLD_TEMP_NAME,
    TEMP_NAME,
    fsync_folder,
    lstat_at,
    open_file_at,
    open_folder,
    split_under,
    sweep_temp,
    symlink_error,
    write_atomically_at,
)
from .listing import list_in_roots
from .paths import relative_in_roots, resolve_in_roots
from .shell import run_shell

_unsynced: contextvars.ContextVar[set[tuple[Path, tuple[str, ...]]] | None] = (
    contextvars.ContextVar("agent_host_unsynced_folders", default=None)
)
"""Inside :meth:`DiskWorkspace.batch_writes`: the folders whose renames and unlinks
still need a sync, as (root, folders under it). The tasks and threads a batch
starts inherit it."""


class DiskWorkspace:
    """A :class:`~.base.Workspace` over plain folders on this machine."""

    def __init__(
        self,
        roots: Sequence[str | os.PathLike[str]],
        *,
        environment: EnvironmentPolicy | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        if not roots:
            raise ValueError("a workspace needs at least one root folder")
        resolved = []
        for root in roots:
            real = Path(os.path.realpath(root))
            if not real.is_dir():
                raise NotADirectoryError(f"workspace root {root} is not a directory")
            resolved.append(real)
        self.roots: list[Path] = resolved
        self.environment = environment
        """The policy commands run under (None: the one of the host whose turn
        runs them, else the default), applied to os.environ at each call."""
        self.sandbox = sandbox
        """The sandbox commands run in (None: the one of the host whose turn runs
        them, else the default)."""

    def __repr__(self) -> str:
        return f"DiskWorkspace({[str(r) for r in self.roots]})"

    def resolve(self, path: str) -> Path:
        try:
            return resolve_in_roots(self.roots, path)
        except OSError as e:
            # realpath lstat()s a symlink, then readlink()s it unguarded: a link
            # swapped away in between raises EINVAL (now a folder) or ENOENT (gone).
            if e.errno not in (errno.EINVAL, errno.ENOENT):
                raise
            raise PathChanged(
                f"{path} changed while being resolved: {e.filename} was a symlink and "
                "then was not. Try again."
            ) from None

    def relative(self, path: Path) -> str:
        return relative_in_roots(self.roots, path)

    # Each operation resolves its path on the worker thread too: realpath's lstats
    # wait behind other threads' fsyncs (a restore writes files in parallel), and
    # would hold the event loop meanwhile.

    async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        return await asyncio.to_thread(self._read, path, limit)

    def _read(self, path: str, limit: int | None = None) -> bytes | None:
        return _read_file(self.roots, self.resolve(path), path, limit)

    async def read_disk(self, path: str, *, limit: int | None = None) -> bytes | None:
        return await DiskWorkspace.read_bytes(self, path, limit=limit)

    async def read_range(self, path: str, start: int, size: int) -> bytes | None:
        return await asyncio.to_thread(
            lambda: _read_file(self.roots, self.resolve(path), path, size, start)
        )

    async def buffer_text(self, path: str) -> str | None:
        return None  # no editor: no buffers

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        buffer: str | None = None,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        # ``buffer`` is for editor buffers; there are none here.
        await asyncio.to_thread(self._write, path, bytes(data), expect, executable)

    def _write(
        self,
        path: str,
        data: bytes,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        _write_atomic(self.roots, self.resolve(path), data, path, expect, executable)

    async def check(self, path: str, expect: IfContent) -> None:
        """FileChanged unless the file holds ``expect`` now: the condition of a write
        someone else (an editor) makes, checked just before it is asked to."""
        await asyncio.to_thread(_check_file, self.roots, self.resolve(path), path, expect)

    async def make_parents(self, path: str) -> None:
        """Create the folders the file would be in, as a write does: an editor asked
        to write a new file in a new folder may not create it."""
        await asyncio.to_thread(_make_parents, self.roots, self.resolve(path), path)

    async def set_executable(self, path: str, executable: bool) -> None:
        """Set or clear the file's exec bits (as a write's ``executable`` does), for
        a file an editor wrote; a file that is not there is left so."""
        await asyncio.to_thread(_chmod_file, self.roots, self.resolve(path), path, executable)

    async def delete(
        self, path: str, *, buffer: str | None = None, expect: IfContent | None = None
    ) -> None:
        await asyncio.to_thread(self._delete, path, expect)

    def _delete(self, path: str, expect: IfContent | None = None) -> None:
        _delete_file(self.roots, self.resolve(path), path, expect)

    @asynccontextmanager
    async def batch_writes(self) -> AsyncIterator[None]:
        # The folders changed inside, each synced once at the end (not after every
        # file, which costs a restore of many files half its time: P4).
        pending: set[tuple[Path, tuple[str, ...]]] = set()
        token = _unsynced.set(pending)
        try:
            yield
        finally:
            _unsynced.reset(token)
            await asyncio.to_thread(_sync_folders, pending)

    async def discard_partial_writes(self, path: str) -> None:
        try:
            real = self.resolve(path)
        except PathOutsideWorkspace:
            return  # nothing of ours can be there
        await asyncio.to_thread(_discard_temp_files, self.roots, real, path)

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        return await asyncio.to_thread(list_in_roots, self.roots, pattern, limit)

    async def run_command(
        self,
        command: str,
        timeout: float = COMMAND_DEFAULT_TIMEOUT,
        max_output: int = COMMAND_MAX_OUTPUT,
        *,
        cwd: Path | None = None,
    ) -> CommandResult:
        env = None if self.environment is None else self.environment.environment()
        where = _root_or_first(self.roots, cwd)
        return await run_shell(
            command, where, timeout, max_output, env=env, roots=self.roots, sandbox=self.sandbox
        )


def _root_or_first(roots: list[Path], cwd: Path | None) -> Path:
    if cwd is None:
        return roots[0]
    if cwd not in roots:
        raise ValueError(f"a command runs in one of the roots, not in {cwd}")
    return cwd


def _check_regular(st: os.stat_result, shown: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        # Reading a FIFO would block forever; devices and sockets are not files either.
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device)")


# Each operation walks ``real`` from its root through folder descriptors (.dirfd):
# ``real`` was checked by resolve_in_roots, but a folder on the way may be swapped
# for a symlink before the file is touched.


def _read_file(
    roots: list[Path], real: Path, shown: str, limit: int | None = None, start: int | None = None
) -> bytes | None:
    """The file's content; with ``start``, at most ``limit`` bytes from there; else
    FileTooLarge if it holds more than ``limit``."""
    root, folders, name = split_under(roots, real)
    try:
        with open_folder(root, folders, shown, "read") as folder:
            st = lstat_at(folder, name)
            if st is None:
                return None
            if stat.S_ISLNK(st.st_mode):
                raise symlink_error(folder, name, shown, "read")
            _check_regular(st, shown)  # before opening: opening a device can act on it
            fd = open_file_at(folder, name, shown, "read")
    except (FileNotFoundError, NotADirectoryError):
        return None  # a folder on the way is missing or is a file: no such file
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        _check_regular(st, shown)  # swapped after the stat?
        if start is not None:
            return os.pread(f.fileno(), limit or 0, start)
        if limit is None:
            return f.read()
        if st.st_size > limit:
            raise FileTooLarge(shown, st.st_size, limit)
        data = f.read(limit + 1)
        if len(data) > limit:  # grew since the fstat
            raise FileTooLarge(shown, os.fstat(f.fileno()).st_size, limit)
        return data


def _write_atomic(
    roots: list[Path],
    real: Path,
    data: bytes,
    shown: str,
    expect: IfContent | None,
    executable: bool | None = None,
) -> None:
    root, folders, name = split_under(roots, real)
    try:
        with open_folder(root, folders, shown, "written", create=True) as folder:
            st = lstat_at(folder, name)
            if st is not None:
                if stat.S_ISLNK(st.st_mode):
                    raise symlink_error(folder, name, shown, "written")
                _check_regular(st, shown)
            if expect is not None:
                _check_content(folder, name, st, shown, expect)
            kept_mode = None if st is None else stat.S_IMODE(st.st_mode)
            if executable is not None:
                kept_mode = _with_exec(
                    _NEW_FILE_MODE if kept_mode is None else kept_mode, executable
                )
            pending = _unsynced.get()
            write_atomically_at(
                folder, name, data, exact_mode=kept_mode, sync_folder=pending is None
            )
            if pending is not None:
                pending.add((root, tuple(folders)))
    except NotADirectoryError:
        raise ToolError(f"cannot create {shown}: a parent of it is a file, not a folder") from None


def _delete_file(roots: list[Path], real: Path, shown: str, expect: IfContent | None) -> None:
    root, folders, name = split_under(roots, real)
    try:
        with open_folder(root, folders, shown, "deleted") as folder:
            st = lstat_at(folder, name)
            if expect is not None:
                _check_content(folder, name, st, shown, expect)
            if st is None:
                return
            if stat.S_ISDIR(st.st_mode):
                raise ToolError(f"{shown} is a directory; only files can be deleted")
            # A symlink swapped in for the file is removed itself, its target left alone.
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder)
            pending = _unsynced.get()
            if pending is None:
                fsync_folder(folder)
            else:
                pending.add((root, tuple(folders)))
    except (FileNotFoundError, NotADirectoryError):
        if expect is not None and expect.blob is not None:
            raise FileChanged(shown, None) from None
        return  # a folder on the way is missing or is a file: nothing to delete


def _check_file(roots: list[Path], real: Path, shown: str, expect: IfContent) -> None:
    root, folders, name = split_under(roots, real)
    try:
        with open_folder(root, folders, shown, "checked") as folder:
            _check_content(folder, name, lstat_at(folder, name), shown, expect)
    except (FileNotFoundError, NotADirectoryError):
        if expect.blob is not None:
            raise FileChanged(shown, None) from None


def _make_parents(roots: list[Path], real: Path, shown: str) -> None:
    root, folders, _ = split_under(roots, real)
    try:
        with open_folder(root, folders, shown, "written", create=True):
            pass
    except NotADirectoryError:
        raise ToolError(f"cannot create {shown}: a parent of it is a file, not a folder") from None


def _chmod_file(roots: list[Path], real: Path, shown: str, executable: bool) -> None:
    root, folders, name = split_under(roots, real)
    try:
        with open_folder(root, folders, shown, "changed") as folder:
            st = lstat_at(folder, name)
            if st is None or not stat.S_ISREG(st.st_mode):
                return  # gone, or a symlink swapped in: not followed
            fd = open_file_at(folder, name, shown, "changed")
            try:
                os.fchmod(fd, _with_exec(stat.S_IMODE(os.fstat(fd).st_mode), executable))
            finally:
                os.close(fd)
    except (FileNotFoundError, NotADirectoryError):
        return


def _with_exec(mode: int, executable: bool) -> int:
    """``mode`` with the exec bits set where it has read bits (as ``chmod +x`` under
    the usual umask does), or with every exec bit cleared."""
    return mode | ((mode & 0o444) >> 2) if executable else mode & ~0o111


def _current_umask() -> int:
    # There is no way to read the umask without setting it; done once, at import.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_NEW_FILE_MODE = 0o666 & ~_current_umask()


def _check_content(
    folder: int, name: str, st: os.stat_result | None, shown: str, expect: IfContent
) -> None:
    """FileChanged unless ``name`` in ``folder`` (as ``st`` found it) holds ``expect``."""
    if st is None:
        found = None
    else:
        if stat.S_ISLNK(st.st_mode):
            raise symlink_error(folder, name, shown, "checked")
        _check_regular(st, shown)
        with os.fdopen(open_file_at(folder, name, shown, "checked"), "rb") as f:
            found = blob_id(f.read())
    if found != expect.blob:
        raise FileChanged(shown, found)


def _discard_temp_files(roots: list[Path], real: Path, shown: str) -> None:
    """Unlink the temp files a write of ``real`` that died left in its folder: only
    names a write makes, so no file of the user's, and of those only the ones whose
    writer is gone (see :func:`~.dirfd.sweep_temp`): never one a live write holds
    (another process's restore of the same file)."""
    root, folders, name = split_under(roots, real)
    try:
        with open_folder(root, folders, shown, "cleaned up") as fd:
            for entry in os.listdir(fd):
                match = TEMP_NAME.fullmatch(entry) or OLD_TEMP_NAME.fullmatch(entry)
                if match is not None and match["name"] == name:
                    sweep_temp(fd, entry)
    except (FileNotFoundError, NotADirectoryError, ToolError):
        return  # no folder (or not the one checked): no strays of ours in it


def _sync_folders(folders: set[tuple[Path, tuple[str, ...]]]) -> None:
    for root, parts in folders:
        shown = "/".join(parts) or "."
        with suppress(OSError, ToolError):  # best effort, as fsync_folder is
            with open_folder(root, parts, shown, "synced") as fd:
                fsync_folder(fd)
