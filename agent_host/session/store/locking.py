"""Inter-process locks for the file store.

On POSIX a lock is ``flock`` on a lock file: 7 µs to take and release here, where
``filelock.FileLock`` 4.x costs 160-280 µs (docs/performance.md), about as much
as the fdatasync an append exists to pay for. The kernel drops a
flock when its holder dies, so a crashed writer never leaves a session locked.
Elsewhere (Windows) :class:`filelock.FileLock` does the job.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import StoreBusy
from .pacing import WouldBlock

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

TIMEOUT = 30.0


@contextmanager
def hold(path: str, timeout: float = TIMEOUT, wait: bool = True) -> Iterator[None]:
    """Hold the exclusive lock on ``path`` (created 0600); StoreBusy after ``timeout``.

    With ``wait=False`` a lock held elsewhere raises :class:`WouldBlock` at once.
    """
    if fcntl is None:  # pragma: no cover - Windows
        if not wait:
            raise WouldBlock(path)
        from filelock import FileLock, Timeout

        try:
            with FileLock(path, timeout=timeout, mode=0o600):
                yield
        except Timeout:
            raise _busy(path, timeout) from None
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        _acquire(fd, path, timeout, wait)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


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
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
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
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if fcntl is None:  # pragma: no cover - Windows: no cross-process lease
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
