"""Opening a path under a root folder one component at a time, never following a symlink.

:func:`~.paths.resolve_in_roots` checks a path once; a process that swaps a folder
on the way for a symlink after that check would otherwise redirect the read or
write that follows. Here every folder is opened relative to the one before it
(``openat`` with ``O_NOFOLLOW``), and the file is created, renamed and unlinked
relative to the last one, so a symlink that appears at any moment makes the
operation fail instead of leaving the workspace.

What this does not cover: a folder moved (not linked) out of the workspace after
it was opened is still written into, as it is the folder that was checked.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import PathChanged, PathOutsideWorkspace, ToolError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

# Every ``dir_fd`` call this module makes (and the lstat it does with one); Linux has
# them all. Checked when used, not at import, so the package imports where they lack.
_DIR_FD_CALLS = (os.open, os.mkdir, os.rename, os.unlink, os.stat)
_SUPPORTED = set(_DIR_FD_CALLS) <= os.supports_dir_fd and os.stat in os.supports_follow_symlinks
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a folder is opened: never through a symlink, and not inherited by commands."""


def split_under(roots: Sequence[Path], real: Path) -> tuple[Path, tuple[str, ...], str]:
    """The root ``real`` lies in (the longest, for nested roots), the folders from
    it to ``real``, and ``real``'s name -- ``"."`` when ``real`` is the root itself,
    so that a stat of it in the root finds the root, a directory, not a file."""
    inside = [root for root in roots if real.is_relative_to(root)]
    if not inside:
        raise PathOutsideWorkspace(f"{real} is outside the workspace roots")
    root = max(inside, key=lambda r: len(r.parts))
    parts = real.relative_to(root).parts
    if not parts:
        return root, (), "."
    return root, parts[:-1], parts[-1]


def changed(shown: str, part: str, done: str) -> PathChanged:
    """The error for a path component that turned into a symlink mid-operation, or
    was replaced (a folder flipping between a link and back is seen either way).

    A ToolError, not PathOutsideWorkspace: the walk cannot tell where the new link
    points (it may well stay inside), only that the path is no longer the one that
    was checked; trying again re-checks it.
    """
    return PathChanged(
        f"{shown} changed while being {done}: {part!r} was replaced, by a symlink or "
        "otherwise, after the path was checked; a symlink is not followed then, so "
        "nothing was done through it. Try again."
    )


def symlink_error(fd: int, name: str, shown: str, done: str) -> Exception:
    """The error for a symlink ``name`` in folder ``fd`` where the checked path had none.

    realpath leaves a symlink loop unresolved, so a loop comes here too: it is
    reported as the ELOOP any open of it gives (a stat, not a read, of the target).
    """
    try:
        os.stat(name, dir_fd=fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return OSError(errno.ELOOP, os.strerror(errno.ELOOP), shown)
    return changed(shown, name, done)


@contextmanager
def open_folder(
    root: Path, folders: Sequence[str], shown: str, done: str, *, create: bool = False
) -> Iterator[int]:
    """A descriptor of ``root/folders...``, each opened inside the one before.

    ``create`` makes missing folders (0o777 less the umask, as ``mkdir -p``).
    FileNotFoundError or NotADirectoryError if one is missing or is a file; the
    error of :func:`symlink_error` if one is a symlink (a ToolError; ELOOP for a loop).
    """
    if not _SUPPORTED:
        raise ToolError("this platform cannot open files relative to a folder (dir_fd)")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # roots are trusted
    try:
        for name in folders:
            child = _open_child(fd, name, shown, done, create)
            fd, parent = child, fd
            os.close(parent)
        yield fd
    finally:
        os.close(fd)


def _open_child(fd: int, name: str, shown: str, done: str, create: bool) -> int:
    try:
        return _open_dir(fd, name, shown, done)
    except FileNotFoundError:
        if not create:
            raise
    with suppress(FileExistsError):  # made meanwhile by someone else: open it the same way
        os.mkdir(name, 0o777, dir_fd=fd)
    return _open_dir(fd, name, shown, done)


def _open_dir(fd: int, name: str, shown: str, done: str) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError as e:
        if e.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        # Linux says ENOTDIR for a symlink under O_DIRECTORY|O_NOFOLLOW, as for a file,
        # so look again: only a non-folder that is still there and no link is a file
        # in the way. A folder or link now, or nothing, means it is being swapped.
        st = lstat_at(fd, name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise symlink_error(fd, name, shown, done) from None
        if st is None or stat.S_ISDIR(st.st_mode):
            raise changed(shown, name, done) from None
        raise


def lstat_at(fd: int, name: str) -> os.stat_result | None:
    """``name`` in folder ``fd``, the link itself if it is one; None if missing."""
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_file_at(fd: int, name: str, shown: str, done: str) -> int:
    """``name`` in folder ``fd`` opened for reading, never through a symlink.

    O_NONBLOCK so that a FIFO swapped in after the caller's stat does not block
    the open; the caller checks what it opened with fstat.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        return os.open(name, flags, dir_fd=fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise symlink_error(fd, name, shown, done) from None
        raise


TEMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)-[0-9a-f]{12}\.tmp")
"""The temp file a write of ``name`` makes beside it: ``.<name>.<pid>-<12 hex>.tmp``,
``pid`` its writer's process, which holds an flock on it while it writes."""
OLD_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{12}\.tmp")
"""The name earlier versions gave it (no owner); the stores' own temp files too."""


def is_temp_name(entry: str) -> bool:
    """Whether ``entry`` is named as a write's temp file: never a user's file to
    capture, whoever is writing it."""
    return TEMP_NAME.fullmatch(entry) is not None or OLD_TEMP_NAME.fullmatch(entry) is not None


def sweep_temp(fd: int, entry: str) -> bool:
    """Remove ``entry`` from folder ``fd`` if it is a write's temp file whose writer
    is gone (its process does not exist, and no one holds its lock); whether it did.

    A temp file of a live writer -- this process's, another server's restore --
    is left alone: its rename is still to come. One an earlier version named (no
    pid) is judged by its lock alone.
    """
    match = TEMP_NAME.fullmatch(entry)
    if match is None:
        if OLD_TEMP_NAME.fullmatch(entry) is None:
            return False
    elif _alive(int(match["pid"])):
        return False
    try:
        tmp = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return False  # gone already, or not a file we may touch
    try:
        if not stat.S_ISREG(os.fstat(tmp).st_mode):
            return False
        if fcntl is not None:
            try:
                # A writer in another pid namespace, or one whose pid was reused: its
                # lock says it is alive.
                fcntl.flock(tmp, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
        if not _same_file(fd, entry, tmp):
            return False  # renamed or replaced since it was opened
        with suppress(FileNotFoundError):
            os.unlink(entry, dir_fd=fd)
        return True
    finally:
        os.close(tmp)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def write_atomically_at(
    fd: int, name: str, data: bytes, *, exact_mode: int | None, sync_folder: bool = True
) -> None:
    """:func:`~agent_host.session.durable.write_atomically`, inside folder ``fd``: a new
    file gets 0o666 less the umask, a replaced one ``exact_mode`` (its old mode).

    The temp file is named :data:`TEMP_NAME` (its writer's pid in it) and held
    locked until renamed, so that sweeps (:func:`sweep_temp`) can tell the strays a
    crash leaves from the temp files of writes still going on; it is removed on any
    error. The rename replaces a symlink put at ``name`` meanwhile rather than
    following it. ``sync_folder=False`` leaves the folder's sync (which makes the
    rename durable) to the caller.
    """
    tmp, file_fd = _new_temp(fd, name)
    try:
        try:
            if exact_mode is not None:
                os.fchmod(file_fd, exact_mode)
            with os.fdopen(file_fd, "wb", closefd=False) as f:
                f.write(data)
            os.fsync(file_fd)
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            os.close(file_fd)  # the lock goes with it: after the rename, not before
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=fd)
        raise
    if sync_folder:
        fsync_folder(fd)


def _new_temp(fd: int, name: str) -> tuple[str, int]:
    """A new temp file for ``name`` in folder ``fd``, open and locked (flock) by this
    writer: a sweep of the strays of writes that died (another window finishing a
    restore, another session's) can tell it is alive, and leaves it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = f".{name}.{os.getpid()}-{secrets.token_hex(6)}.tmp"
        file_fd = os.open(tmp, flags, 0o666, dir_fd=fd)
        if fcntl is None:  # pragma: no cover - Windows: no sweep can tell
            return tmp, file_fd
        try:
            fcntl.flock(file_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # A sweep may have locked and unlinked it between its creation and
            # the lock: then the name is gone (or another file's), and we go again.
            if _same_file(fd, tmp, file_fd):
                return tmp, file_fd
        except BlockingIOError:
            pass  # a sweep holds it, about to unlink it
        except BaseException:
            os.close(file_fd)
            raise
        os.close(file_fd)


def _same_file(fd: int, name: str, file_fd: int) -> bool:
    try:
        named = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(file_fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def fsync_folder(fd: int) -> None:
    """Make the renames and unlinks in folder ``fd`` durable, best effort: some
    filesystems refuse fsync on a folder, and the user's folder may be on any."""
    with suppress(OSError):
        os.fsync(fd)
