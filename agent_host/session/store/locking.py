"""Inter-process locks for the file store.

On POSIX a lock is ``flock`` on a lock file: 7 µs to take and release here, where
``filelock.FileLock`` 4.x costs 160-280 µs (docs/performance.md), about as much
as the fdatasync an append exists to pay for. The kernel drops a
flock when its holder dies, so a crashed writer never leaves a session locked.
Elsewhere (Windows) :class:`filelock.FileLock` does the job.

A reader of a store it cannot write (a read-only mount, another user's folder)
takes the lock on the lock file opened read-only, which flock allows, or reads
without it when even that file cannot be opened; it then must not repair anything.
A lock file that cannot be opened for a write raises :class:`StoreUnavailable`.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import StoreBusy, store_unavailable
from .pacing import WouldBlock

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

TIMEOUT = 30.0
CANNOT_WRITE = frozenset(
    (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOSPC)
    + ((errno.EDQUOT,) if hasattr(errno, "EDQUOT") else ())
)
"""Why a lock file a reader needs may not be creatable or writable: the reader
then falls back to opening it read-only (ENOENT: no ``locks/`` folder, which a
read does not create)."""


@contextmanager
def hold(
    path: str, timeout: float = TIMEOUT, wait: bool = True, reader: bool = False
) -> Iterator[bool]:
    """Hold the exclusive lock on ``path`` (created 0600); StoreBusy after ``timeout``.

    With ``wait=False`` a lock held elsewhere raises :class:`WouldBlock` at once.
    Yields whether the lock is held: only a ``reader`` may go without, when the
    lock file cannot be opened at all (see the module's doc).
    """
    if fcntl is None:  # pragma: no cover - Windows
        if not wait:
            raise WouldBlock(path)
        from filelock import FileLock, Timeout

        try:
            with FileLock(path, timeout=timeout, mode=0o600):
                yield True
        except Timeout:
            raise _busy(path, timeout) from None
        return
    fd = _open_for_reader(path) if reader else open_lock_file(path)
    if fd is None:
        yield False
        return
    try:
        _acquire(fd, path, timeout, wait)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def open_lock_file(path: str) -> int:
    """The lock file at ``path``, opened to write (created 0600 if absent)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise store_unavailable(path, "lock", exc) from exc


def _open_for_reader(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno not in CANNOT_WRITE:
            raise store_unavailable(path, "lock", exc) from exc
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno not in CANNOT_WRITE:
            raise store_unavailable(path, "lock", exc) from exc
        return None


def _acquire(fd: int, path: str, timeout: float, wait: bool, mode: int | None = None) -> None:
    mode = fcntl.LOCK_EX if mode is None else mode
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        if not wait:
            raise WouldBlock(path) from None
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while True:
        time.sleep(pause)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise _busy(path, timeout) from None
            pause = min(pause * 2, 0.02)


class SharedHold:
    """A lock file this process holds shared while any of its threads needs it.

    flock belongs to the open file, not the thread, so the threads of one store
    share one open file and count themselves in and out; the lock is taken by the
    first and released by the last. Without fcntl (Windows) it holds nothing.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._fd: int | None = None
        self._users = 0
        self._mutex = threading.Lock()

    @contextmanager
    def held(self, wait: bool = True, timeout: float = TIMEOUT) -> Iterator[None]:
        """Hold it shared; with ``wait=False`` raise :class:`WouldBlock` rather than wait."""
        if not self._mutex.acquire(blocking=wait):
            raise WouldBlock(self._path)
        try:
            if self._users == 0 and fcntl is not None:
                if self._fd is None:
                    self._fd = open_lock_file(self._path)
                _acquire(self._fd, self._path, timeout, wait, fcntl.LOCK_SH)
            self._users += 1
        finally:
            self._mutex.release()
        try:
            yield
        finally:
            with self._mutex:
                self._users -= 1
                if self._users == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._mutex:
            if self._fd is not None and self._users == 0:
                os.close(self._fd)
                self._fd = None


def _busy(path: str, timeout: float) -> StoreBusy:
    return StoreBusy(
        f"the store stayed locked for {timeout:.0f}s ({path}); "
        "another agent-host process is holding it"
    )


def try_hold(path: str) -> int | None:
    """Take the lock on ``path`` if it is free: the open fd (close it to release), or None.

    The kernel releases it when the holder exits, crashed or not, so a lease taken
    this way never outlives the process that took it.
    """
    fd = open_lock_file(path)
    if fcntl is None:  # pragma: no cover - Windows: no cross-process lease
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
