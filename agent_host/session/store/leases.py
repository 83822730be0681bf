"""Turn leases a crash releases: a lock file, or a set in this process only; and
waiting for one another holder has."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from ..errors import TurnInProgress
from . import locking

HOST = socket.gethostname()


def holder_stamp() -> str:
    """Who holds a lease, as its lock file records it: ``pid host``."""
    return f"{os.getpid()} {HOST}"


def who_holds(stamp: str) -> str:
    """Where the holder a ``pid host`` stamp names runs, said for a message."""
    pid, _, host = stamp.strip().partition(" ")
    if not pid.isdigit():
        return "in another process (another editor window?)"
    if host and host != HOST:
        return f"on another host ({host}, pid {pid})"
    if int(pid) == os.getpid():
        return f"in this process (pid {pid}, another AgentHost on the same store)"
    return f"in another process (pid {pid} on this host: another editor window?)"


@asynccontextmanager
async def file_lease(path: str, session_id: str) -> AsyncIterator[None]:
    """A turn lease held as a lock on the file at ``path`` (see turn_lease); the
    holder writes its pid and host into it, for a refusal to name."""
    fd = locking.try_hold(path)
    if fd is None:
        try:
            with open(path, encoding="utf-8", errors="replace") as held:
                stamp = held.read(200)
        except OSError:
            stamp = ""
        raise TurnInProgress(
            f"a turn is running in session {session_id!r} {who_holds(stamp)}; "
            "wait for it to end or cancel it there"
        )
    try:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder_stamp().encode(), 0)
        except OSError:
            pass  # a lock file opened read-only: the lease holds, unnamed
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
                raise TurnInProgress(
                    f"a turn is running in session {session_id!r} in this process "
                    f"(pid {os.getpid()}, another AgentHost on the same store)"
                )
            self._held.add(session_id)
        try:
            yield
        finally:
            with self._mutex:
                self._held.discard(session_id)


FIRST_RETRY = 0.005
"""Seconds before the first retry of a lease another holder has; doubled each time."""
MAX_RETRY = 0.25
"""The longest pause between retries: how late a waiter may notice the lease is free."""


@asynccontextmanager
async def waiting_lease(
    take: Callable[[], AbstractAsyncContextManager[None]], wait: bool | float
) -> AsyncIterator[None]:
    """Hold the lease ``take`` makes, waiting while another holder has it (True: for
    as long as it takes; seconds: at most that, then its TurnInProgress).

    Every backend's lease refuses at once (a flock with LOCK_NB, a set, an advisory
    lock tried), so waiting is retrying with a backoff: the same for every store,
    in this process or across processes and hosts, and a waiter that gives up
    holds nothing."""
    deadline = None if wait is True else time.monotonic() + float(wait)
    pause = FIRST_RETRY
    async with AsyncExitStack() as stack:
        while True:
            try:
                await stack.enter_async_context(take())
                break
            except TurnInProgress:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise
                await asyncio.sleep(pause if left is None else min(pause, left))
                pause = min(pause * 2, MAX_RETRY)
        yield
