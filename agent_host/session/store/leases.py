"""Turn leases a crash releases: a lock file, or a set in this process only."""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..errors import TurnInProgress
from . import locking


@asynccontextmanager
async def file_lease(path: str, session_id: str) -> AsyncIterator[None]:
    """A turn lease held as a lock on the file at ``path`` (see turn_lease)."""
    fd = locking.try_hold(path)
    if fd is None:
        raise TurnInProgress(
            f"a turn is running in session {session_id!r} in another process "
            "(another editor window?); wait for it to end or cancel it there"
        )
    try:
        yield
    finally:
        os.close(fd)


class LocalLeases:
    """Turn leases for a store no other process can open (one in memory): a set of the
    sessions whose turn is running, which nothing outlives but this process."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._mutex = threading.Lock()  # event loops in several threads may share a store

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        with self._mutex:
            if session_id in self._held:
                raise TurnInProgress(f"a turn is running in session {session_id!r}")
            self._held.add(session_id)
        try:
            yield
        finally:
            with self._mutex:
                self._held.discard(session_id)
