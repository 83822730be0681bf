"""File writes that a crash cannot tear: a reader sees the old bytes or the new, whole,
and once a write has returned a power cut does not undo it."""

from __future__ import annotations

import os
import secrets
from contextlib import suppress
from pathlib import Path


def write_atomically(
    path: Path,
    data: bytes,
    *,
    mode: int = 0o666,
    exact_mode: int | None = None,
    temp_prefix: str | None = None,
    dir_sync_best_effort: bool = False,
) -> None:
    """Replace ``path`` with ``data`` by way of a temp file in its folder, which must exist.

    ``mode``: the permissions of a new file, less the umask, as for any program's new
    file. ``exact_mode``: set as given, to keep the mode of the file being replaced.
    ``temp_prefix`` begins the temp file's name (by default ``.<name>.``) so that a
    sweep can tell the strays a crash leaves. ``dir_sync_best_effort``: see
    :func:`fsync_dir`.
    """
    prefix = f".{path.name}." if temp_prefix is None else temp_prefix
    tmp = path.with_name(f"{prefix}{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            if exact_mode is not None:
                os.fchmod(f.fileno(), exact_mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent, best_effort=dir_sync_best_effort)


def fsync_dir(path: str | os.PathLike[str], *, best_effort: bool = False) -> None:
    """Make the renames and unlinks done in folder ``path`` durable.

    ``best_effort`` ignores an OSError: some filesystems refuse fsync on a folder, and
    a folder the user chose may be on any of them.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        if not best_effort:
            raise
