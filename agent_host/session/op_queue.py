"""One session's operations, one at a time, in arrival order.

A turn, restore, undo, compaction, item edit or delete holds the session's slot
while it runs. A caller that does not wait (``wait=False``, the default) is refused
with TurnInProgress when the slot is taken, as the wire's ``session/send`` during a
turn is; one that waits (``wait=True``) queues behind the operations before it; a
number waits at most that many seconds, then is refused the same way.

Futures are made on the waiting caller's loop, so the queue is not bound to one
event loop (the synchronous facades run each call in a loop of its own).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeAlias

from .errors import TurnInProgress

Wait: TypeAlias = "bool | float"
"""False: refuse at once if busy; True: wait in arrival order; seconds: wait at most that."""


DEFAULT_WAIT = 60.0
"""Seconds a call of the Python APIs that mirror a waiting one (the Agents SDK's
Session, the harness facades' run) waits for the operations before it on the
session, here or in another process."""


def as_wait(wait: float | None) -> Wait:
    """Seconds as those APIs take them, in ``Wait``'s terms: None waits as long as
    it takes, 0 not at all (TurnInProgress at once)."""
    if wait is None:
        return True
    if isinstance(wait, bool):
        return wait
    if not isinstance(wait, int | float) or wait < 0:
        raise ValueError(f"wait must be seconds >= 0 or None (no bound), not {wait!r}")
    return float(wait) if wait > 0 else False


def check_wait(wait: object) -> Wait:
    """``wait`` as given, or ValueError for one that is not a bool or a number >= 0."""
    if isinstance(wait, bool):
        return wait
    if isinstance(wait, int | float) and wait >= 0:
        return float(wait)
    raise ValueError(f"wait must be True, False or a number of seconds >= 0, not {wait!r}")


def remaining(wait: Wait, started: float) -> Wait:
    """What is left of ``wait`` (a bound in seconds) since ``started`` (time.monotonic)."""
    if isinstance(wait, bool):
        return wait
    return max(0.0, wait - (time.monotonic() - started))


class OpQueue:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._busy = False
        self._holder = ""
        """What holds the slot (``adding items``, ``a turn``), for a refusal to name."""
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def busy(self) -> bool:
        return self._busy

    @asynccontextmanager
    async def slot(self, wait: Wait = False, what: str = "a turn") -> AsyncIterator[None]:
        """Hold the session's slot for the block; TurnInProgress when it is not free
        (``wait`` False) or not free in time (``wait`` seconds)."""
        await self.acquire(wait, what)
        try:
            yield
        finally:
            self.release()

    async def acquire(self, wait: Wait = False, what: str = "a turn") -> None:
        if not self._busy and not self._waiters:
            self._busy, self._holder = True, what
            return
        if wait is False:
            raise self.refusal(what)
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(ticket)
        try:
            if wait is True:
                await ticket
            else:
                await asyncio.wait_for(ticket, wait)
        except (asyncio.CancelledError, TimeoutError) as exc:
            if ticket.done() and not ticket.cancelled():
                self.release()  # handed the slot as we gave up: pass it on
            else:
                self._forget(ticket)
            if isinstance(exc, TimeoutError):
                raise self.refusal(what, waited=float(wait)) from None
            raise
        self._holder = what

    def release(self) -> None:
        """Hand the slot to the next waiter, or free it."""
        while self._waiters:
            ticket = self._waiters.popleft()
            if ticket.done():
                continue  # gave up waiting
            try:
                same_loop = asyncio.get_running_loop() is ticket.get_loop()
            except RuntimeError:
                same_loop = False
            if same_loop:
                ticket.set_result(None)
                return
            try:
                ticket.get_loop().call_soon_threadsafe(self._hand_over, ticket)
            except RuntimeError:
                continue  # its loop is closed: no one waits there any more
            return
        self._busy = False

    def _hand_over(self, ticket: asyncio.Future[None]) -> None:
        if ticket.done():
            self.release()  # it gave up meanwhile: the next one, or free
        else:
            ticket.set_result(None)

    def _forget(self, ticket: asyncio.Future[None]) -> None:
        try:
            self._waiters.remove(ticket)
        except ValueError:
            pass

    def refusal(self, what: str, waited: float | None = None) -> TurnInProgress:
        waited_for = f" ({what} waited {waited:g}s)" if waited is not None else ""
        holder = f" ({self._holder})" if self._holder else ""
        return TurnInProgress(
            f"a turn is running in session {self.session_id!r}{holder} in this process "
            f"(pid {os.getpid()}){waited_for}; wait for it or cancel it first"
        )
