"""Pins: blobs a live holder relies on that no event refers to yet, kept from gc.

The workspace index (see capture) holds the blob of every file's content, so that
the content a command overwrites is already stored; most of those blobs are of
files no event has touched. gc -- in this process or in another, such as the
``agent-host gc`` command -- spares a blob a live holder has pinned.

A holder that dies leaves its pins behind until gc sees it is dead: here by its
lock, which the kernel drops with the process; in PostgreSQL, where a holder on
another host cannot be watched, by the expiry each pin renews. A holder whose pins
lapsed learns it on its next pin (``False``) and must pin again all it relies on and
check that it is still stored.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Collection
from contextlib import suppress
from pathlib import Path

from .errors import store_unavailable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_SUFFIX = ".pins"


def new_holder() -> str:
    return secrets.token_hex(8)


class FilePins:
    """Pins as one file per holder in ``folder``, a blob id a line, appended to.

    The holder keeps its file locked (flock) for as long as it lives; gc takes a
    file it can lock for a dead holder's and removes it. The lines need no fsync:
    a crash that could lose them ends the holder too.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held: dict[str, int] = {}
        self._mutex = threading.Lock()

    def pin(self, holder: str, blobs: Collection[str]) -> bool:
        """Add ``blobs`` to what ``holder`` keeps; whether it had pinned before."""
        with self._mutex:
            fd = self._held.get(holder)
            known = fd is not None
            if fd is None:
                fd = self._held[holder] = self._create(holder)
            if blobs:
                lines = "".join(f"{blob}\n" for blob in blobs).encode()
                try:
                    os.write(fd, lines)
                except OSError as exc:
                    raise store_unavailable(self._path(holder), "pin snapshots in", exc) from exc
            return known

    def release(self, holder: str) -> None:
        with self._mutex:
            fd = self._held.pop(holder, None)
            if fd is None:
                return
            try:
                with suppress(FileNotFoundError):
                    os.unlink(self._path(holder))
            except OSError as exc:  # left for gc, which removes a dead holder's file
                raise store_unavailable(self._path(holder), "release pins in", exc) from exc
            finally:
                os.close(fd)

    def live(self) -> set[str]:
        """Every blob a live holder pinned; a dead holder's file is removed."""
        pinned: set[str] = set()
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return pinned
        for entry in entries:
            try:
                fd = os.open(entry.path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # released meanwhile
            try:
                if _lockable(fd):
                    # Its holder is gone (or crashed before naming its file).
                    with suppress(FileNotFoundError):
                        os.unlink(entry.path)
                    continue
                if entry.name.endswith(_SUFFIX):
                    with os.fdopen(os.dup(fd), "rb") as f:
                        # A line cut short is being written: its blob was stored
                        # just now, and gc's grace period spares it.
                        pinned.update(
                            line.decode("ascii", "replace") for line in f.read().splitlines()
                        )
            finally:
                os.close(fd)
        return pinned

    def _path(self, holder: str) -> Path:
        return self.folder / f"{holder}{_SUFFIX}"

    def _create(self, holder: str) -> int:
        """The holder's file, locked before it is given its name, so gc never takes
        a live holder's new file for a dead one's."""
        temp = self.folder / f".{holder}.new"
        while True:
            try:
                self.folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.folder.mkdir(mode=0o700, exist_ok=True)
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise store_unavailable(self.folder, "pin snapshots in", exc) from exc
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                os.replace(temp, self._path(holder))
                return fd
            except FileNotFoundError:
                os.close(fd)  # a gc took it, unlocked, for a dead holder's: again
            except OSError as exc:
                os.close(fd)
                raise store_unavailable(self.folder, "pin snapshots in", exc) from exc


def _lockable(fd: int) -> bool:
    if fcntl is None:  # pragma: no cover - Windows: every holder counts as live
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class MemoryPins:
    """Pins for a store no other process can open."""

    def __init__(self) -> None:
        self._held: dict[str, set[str]] = {}
        self._mutex = threading.Lock()

    def pin(self, holder: str, blobs: Collection[str]) -> bool:
        with self._mutex:
            known = holder in self._held
            self._held.setdefault(holder, set()).update(blobs)
            return known

    def release(self, holder: str) -> None:
        with self._mutex:
            self._held.pop(holder, None)

    def live(self) -> set[str]:
        with self._mutex:
            return set().union(*self._held.values())
