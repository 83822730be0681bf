"""One session as the engine holds it: the store's log plus an in-memory copy.

Every append names the head it expects, so a second writer (another editor window,
another process) turns into a clean CheckpointConflictError, never a fork; before
a turn the copy is refreshed from the store, so a session that moved on elsewhere
is reloaded first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import attrs

from . import events as ev
from .store import Checkpointer
from .timeline import Timeline

T = TypeVar("T")
log = logging.getLogger(__name__)


Listener = Callable[[str, object], Awaitable[None] | None]


@attrs.define
class SessionState:
    store: Checkpointer
    id: str
    events: list[ev.Event] = attrs.field(factory=list)
    listener: Listener | None = None
    """Told of every event this state appends, as the store recorded it."""
    _lock: asyncio.Lock = attrs.field(factory=asyncio.Lock, init=False, repr=False)
    """One change at a time: a read refreshing the copy while a turn appends to it
    would otherwise add the turn's events twice."""
    _timeline: Timeline | None = attrs.field(default=None, init=False, repr=False)
    _folded: int = attrs.field(default=0, init=False, repr=False)
    """How many of ``events`` the timeline has folded; events only grow between
    refreshes that replace the list, which drop the timeline."""

    @property
    def head(self) -> int:
        return self.events[-1].seq if self.events else 0

    @property
    def timeline(self) -> list[ev.Event]:
        """The events as restores left them: what the conversation, checkpoints
        and restores are folded from (see :mod:`.timeline`)."""
        if self._timeline is None or self._folded > len(self.events):
            self._timeline, self._folded = Timeline(), 0
        if self._folded < len(self.events):
            self._timeline.extend(self.events[self._folded :])
            self._folded = len(self.events)
        return self._timeline.events

    @property
    def assistant_messages(self) -> int:
        return sum(1 for e in self.timeline if type(e) is ev.AssistantMessage)

    async def refresh(self) -> None:
        """Pick up whatever other writers appended (or cut) since we last looked."""
        async with self._lock:
            await self._refresh()

    async def _refresh(self) -> None:
        if self.events:
            # Our last event still in place means the log only grew since.
            newer = await self.store.read(self.id, since_seq=self.head - 1)
            if newer and newer[0] == self.events[-1]:
                self.events.extend(newer[1:])
                return
        self.events = await self.store.read(self.id)
        self._timeline = None

    async def append(self, events: Sequence[ev.Event], untold: int = 0) -> int:
        """Append at the head we know; the new head. A cancel cannot split it:
        a write once started is finished and accounted for before the cancel lands.

        The listener hears of each appended event but the first ``untold``.
        """
        first = len(self.events)
        try:
            return await finish_even_if_cancelled(self._append(list(events)))
        finally:
            # Also when a cancel landed meanwhile: what was logged is told.
            for event in self.events[first + untold :]:
                await tell(self.listener, self.id, event)

    async def _append(self, events: list[ev.Event]) -> int:
        async with self._lock:
            return await self._append_locked(events)

    async def _append_locked(self, events: list[ev.Event]) -> int:
        known = self.head
        head = await self.store.append(self.id, events, expected_head=known)
        # Read back what the store recorded (its seqs and timestamps).
        self.events.extend(await self.store.read(self.id, since_seq=known))
        return head

    async def truncate(self, seq: int) -> int:
        """Cut the log back to ``seq``; the truncation id (its events stay retrievable)."""

        async def cut() -> int:
            async with self._lock:
                truncation = await self.store.truncate(self.id, seq, expected_head=self.head)
                del self.events[seq:]
                self._timeline = None
                return truncation.id

        return await finish_even_if_cancelled(cut())


async def tell(listener: Listener | None, session_id: str, item: object) -> None:
    """Tell a listener (the server, a UI); one that fails never breaks the engine."""
    if listener is None:
        return
    try:
        maybe = listener(session_id, item)
        if maybe is not None:
            await maybe
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("event listener failed on %s", type(item).__name__)


async def finish_even_if_cancelled(work: Awaitable[T]) -> T:
    """Run ``work`` to the end even if the caller is cancelled meanwhile; then re-raise."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
