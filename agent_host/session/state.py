"""One session as the engine holds it: the store's log plus an in-memory copy
(or, resumed from its snapshot, the snapshot and what the log added since).

Every append names the head it expects, so a second writer (another editor window,
another process) turns into a clean CheckpointConflictError, never a fork; before
a turn the copy is refreshed from the store, so a session that moved on elsewhere
is reloaded first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import attrs

from . import events as ev
from . import heap, resume_snapshot
from .checkpoints import pending_capture
from .conversation import MessageFold, limit_messages
from .pricing import total_cost
from .resume_snapshot import Header, HeadMark, changes_the_past, session_model
from .session_folder import folder_of
from .store import Checkpointer
from .timeline import Timeline

T = TypeVar("T")
log = logging.getLogger(__name__)


Listener = Callable[[str, Any], Awaitable[None] | None]
"""Told each update of a session: streamed text, an event as it is appended, a
compaction's progress, an MCP server's news (the service's ``Update``; ``Any`` here
so that the engine need not import the MCP package to name it)."""


class NotLoaded(RuntimeError):
    """A caller asked a session resumed from its snapshot for its whole log without
    loading it first (``await state.load()``): a bug in the caller."""


@attrs.define
class SessionState:
    """The session's log as this process holds it.

    Loaded (the default): ``events`` is the whole log. Resumed from a snapshot
    (``refresh(full=False)``, see :mod:`.resume_snapshot`): the state holds the
    snapshot's header and the events after it, and the conversation once a turn
    or the history asks for it; ``events`` and ``timeline`` then need
    ``await load()``, which whatever looks further back (checkpoints, restore,
    compaction, fork) does first.
    """

    store: Checkpointer
    id: str
    _events: list[ev.Event] = attrs.field(factory=list, alias="events")
    listener: Listener | None = None
    """Told of every event this state appends, as the store recorded it."""
    _lock: asyncio.Lock = attrs.field(factory=asyncio.Lock, init=False, repr=False)
    """One change at a time: a read refreshing the copy while a turn appends to it
    would otherwise add the turn's events twice."""
    _timeline: Timeline | None = attrs.field(default=None, init=False, repr=False)
    _folded: int = attrs.field(default=0, init=False, repr=False)
    """How many of ``events`` the timeline has folded; events only grow between
    refreshes that replace the list, which drop the timeline."""
    _base: Header | None = attrs.field(default=None, init=False, repr=False)
    """Resumed from a snapshot: its header (None: the whole log is loaded)."""
    _tail: list[ev.Event] = attrs.field(factory=list, init=False, repr=False)
    """Resumed from a snapshot: the events after its head."""
    _fold: MessageFold | None = attrs.field(default=None, init=False, repr=False)
    """The conversation folded so far, of ``_fold_of`` up to ``_fold_count``."""
    _fold_of: list[ev.Event] | None = attrs.field(default=None, init=False, repr=False)
    _fold_count: int = attrs.field(default=0, init=False, repr=False)
    _stored: tuple[HeadMark, int, MessageFold] | None = attrs.field(
        default=None, init=False, repr=False
    )
    """What the store's snapshot and its segments hold: the event they were folded
    up to and how many messages, of this very fold (a turn end appends a segment
    of what the fold gained since); None: not known here (the next is written
    whole)."""

    @property
    def loaded(self) -> bool:
        """Whether the whole log is held (not only a snapshot and what followed it)."""
        return self._base is None

    @property
    def events(self) -> list[ev.Event]:
        if self._base is not None:
            raise NotLoaded(f"session {self.id}: resumed from its snapshot; await load() first")
        return self._events

    @events.setter
    def events(self, events: list[ev.Event]) -> None:
        self._events = events
        self._forget()

    @property
    def latest(self) -> list[ev.Event]:
        """The events held after the resume snapshot (all of them, loaded): where
        whatever a crash left unfinished is, as no snapshot is taken over it."""
        return self._tail if self._base is not None else self._events

    @property
    def head(self) -> int:
        if self._base is not None:
            return self._tail[-1].seq if self._tail else self._base.head.seq
        return self._events[-1].seq if self._events else 0

    @property
    def timeline(self) -> list[ev.Event]:
        """The events as restores left them: what the conversation, checkpoints
        and restores are folded from (see :mod:`.timeline`)."""
        events = self.events
        if self._timeline is None or self._folded > len(events):
            self._timeline, self._folded = Timeline(), 0
        if self._folded < len(events):
            self._timeline.extend(events[self._folded :])
            self._folded = len(events)
        return self._timeline.events

    def since(self, seq: int) -> list[ev.Event]:
        """The events after ``seq`` (of this turn, say), loaded or not."""
        if self._base is None:
            return self._events[seq:]  # seqs run 1, 2, 3... without gaps
        first = self._base.head.seq
        if seq < first:
            raise NotLoaded(f"session {self.id}: events before seq {first} are not loaded")
        return self._tail[seq - first :]

    @property
    def turns(self) -> int:
        """Prompts in the timeline."""
        if self._base is None:
            return sum(1 for e in self.timeline if type(e) is ev.UserPrompt)
        return self._base.turns + sum(1 for e in self._tail if type(e) is ev.UserPrompt)

    @property
    def assistant_messages(self) -> int:
        if self._base is None:
            return sum(1 for e in self.timeline if type(e) is ev.AssistantMessage)
        return self._base.assistant_messages + sum(
            1 for e in self._tail if type(e) is ev.AssistantMessage
        )

    @property
    def cost(self) -> float | None:
        """USD of the session's model calls (None: one had no known price)."""
        if self._base is None:
            return total_cost(self._events)
        base = self._base.cost
        tail = total_cost(self._tail)
        return None if base is None or tail is None else base + tail

    @property
    def model(self) -> str | None:
        """The model the next turn uses unless another is named (None: the host's)."""
        if self._base is None:
            return session_model(self.timeline)
        chosen = next(
            (e.model for e in reversed(self._tail) if type(e) is ev.UserPrompt and e.model),
            None,
        )
        return chosen or self._base.model

    async def started_in(self) -> str:
        """The folder the session was started in, as its session_started says ("":
        it says none). Resumed from a snapshot older than that field, the log is
        read to learn it."""
        if self._base is not None and self._base.workspace is not None:
            return self._base.workspace
        await self.load()
        return folder_of(self._events)

    async def messages(self, *, keep: bool = True) -> list[dict[str, Any]]:
        """The conversation as the model is sent it (OpenAI chat messages).

        Resumed from a snapshot, the first call reads its conversation; with
        ``keep=False`` (a history page) it is not kept for the next call."""
        fold = self._current_fold()
        if fold is None:
            loaded = await resume_snapshot.load(self.store, self.id, body=True)
            base = self._base
            if base is None:
                # The whole log was read meanwhile (a fork, checkpoints, a restore
                # asked for it while this read the snapshot): fold that instead.
                return await self.messages(keep=keep)
            if loaded is None or loaded.header.head != base.head:
                await self.load()  # the snapshot moved on or went: fold the log
                return await self.messages()
            if not self._holds(loaded):
                await self.load()  # its segments went past what is held here
                return await self.messages()
            fold = loaded.fold
            assert fold is not None and not loaded.cut and loaded.mark is not None
            kept = len(fold.messages)
            fold.extend(self._tail[loaded.covered :])
            if keep:
                self._fold, self._fold_of, self._fold_count = fold, self._tail, len(self._tail)
                self._stored = (loaded.mark, kept, fold)
        return fold.view()[0]

    async def history(self, limit: int | None) -> list[dict[str, Any]]:
        """The last ``limit`` messages of the conversation (all: None), widened so no
        tool result loses its call: resumed from a snapshot, only those are read."""
        if self._current_fold() is not None or limit is None or limit <= 0:
            return limit_messages(await self.messages(keep=False), limit)
        if any(type(e) is ev.Compaction for e in self._tail):
            return limit_messages(await self.messages(keep=False), limit)
        want = limit + 8
        while True:
            loaded = await resume_snapshot.load(self.store, self.id, body=True, last=want)
            base = self._base
            if base is None:  # the whole log was read meanwhile: page that
                return limit_messages(await self.messages(keep=False), limit)
            if loaded is None or loaded.header.head != base.head or not self._holds(loaded):
                await self.load()
                return limit_messages(await self.messages(), limit)
            assert loaded.fold is not None
            loaded.fold.extend(self._tail[loaded.covered :])
            view = loaded.fold.view()[0]
            page = limit_messages(view, limit)
            # Whole unless widening it reached the first message read of a longer one.
            if not loaded.cut or len(page) < len(view):
                return page
            want *= 4

    def _holds(self, loaded: resume_snapshot.Loaded) -> bool:
        """Whether the events a snapshot's segments folded are those held here."""
        if loaded.covered == 0:
            return True
        if loaded.covered > len(self._tail) or loaded.mark is None:
            return False
        return loaded.mark.matches(self._tail[loaded.covered - 1])

    def _current_fold(self) -> MessageFold | None:
        """The conversation folded up to now, folding what was added since; None
        while a snapshot's conversation is still to be read."""
        source = self._tail if self._base is not None else self.timeline
        if self._fold is None or self._fold_of is not source or self._fold_count > len(source):
            if self._base is not None:
                return None
            # A restore replaced the timeline, or nothing was folded yet.
            self._fold, self._fold_of, self._fold_count = MessageFold(), source, 0
        if self._fold_count < len(source):
            self._fold.extend(source[self._fold_count :])
            self._fold_count = len(source)
        return self._fold

    def _forget(self) -> None:
        self._timeline = None
        self._fold, self._fold_of, self._fold_count = None, None, 0
        self._stored = None

    async def load(self) -> None:
        """Hold the whole log (a state resumed from a snapshot reads it now)."""
        if self._base is None:
            return
        async with self._lock:
            if self._base is not None:
                self._events = await self.store.read(self.id)
                self._base, self._tail = None, []
                self._forget()

    async def refresh(self, *, full: bool = True) -> None:
        """Pick up whatever other writers appended (or cut) since we last looked.

        Without ``full``, a session not held yet is resumed from its snapshot
        when it has a good one, and one resumed so stays so."""
        async with self._lock:
            await self._refresh(full)

    async def _refresh(self, full: bool) -> None:
        if self._base is not None:
            if await self._grow_tail() and not full:
                return
        elif self._events:
            # Our last event still in place means the log only grew since.
            newer = await self.store.read(self.id, since_seq=self.head - 1)
            if newer and newer[0] == self._events[-1]:
                self._events.extend(newer[1:])
                return
        elif not full:
            loaded = await resume_snapshot.load(self.store, self.id)
            if loaded is not None:
                self._base, self._tail = loaded.header, loaded.tail
                self._forget()
                return
        self._base, self._tail = None, []
        self._events = await self.store.read(self.id)
        self._forget()
        if not full:
            await self._save_snapshot()  # there was none, or it was stale or damaged
            # Then hold only it, as a resume from it would: not the whole log.
            loaded = await resume_snapshot.load(self.store, self.id)
            if loaded is not None:
                self._base, self._tail, self._events = loaded.header, loaded.tail, []
                self._forget()
                heap.give_back()

    async def _grow_tail(self) -> bool:
        """Fold into the tail what was appended since; False if the log changed
        under it (or changed the past): the state must be read again."""
        newer = await self.store.read(self.id, since_seq=self.head - 1)
        last = self._tail[-1] if self._tail else None
        if not newer or not (newer[0] == last if last else self._base.head.matches(newer[0])):  # type: ignore[union-attr]
            return False
        if any(changes_the_past(e) for e in newer[1:]):
            return False
        self._tail.extend(newer[1:])
        return True

    async def append(self, events: Sequence[ev.Event], untold: int = 0) -> int:
        """Append at the head we know; the new head. A cancel cannot split it:
        a write once started is finished and accounted for before the cancel lands.

        The listener hears of each appended event but the first ``untold``.
        """
        events = list(events)
        if self._base is not None and any(changes_the_past(e) for e in events):
            await self.load()
        known = self.head
        try:
            return await finish_even_if_cancelled(self._append(events))
        finally:
            # Also when a cancel landed meanwhile: what was logged is told.
            for event in self.since(known)[untold:]:
                await tell(self.listener, self.id, event)

    async def _append(self, events: list[ev.Event]) -> int:
        async with self._lock:
            return await self._append_locked(events)

    async def _append_locked(self, events: list[ev.Event]) -> int:
        known = self.head
        head = await self.store.append(self.id, events, expected_head=known)
        # Read back what the store recorded (its seqs and timestamps).
        recorded = await self.store.read(self.id, since_seq=known)
        (self._tail if self._base is not None else self._events).extend(recorded)
        if any(type(e) is ev.TurnEnd or type(e) is ev.Compaction for e in events):
            await self._save_snapshot()
        return head

    async def _save_snapshot(self) -> None:
        """Write the resume snapshot as of the head: at turn ends and compactions,
        so that a resume reads one blob instead of folding the whole log. What the
        store holds already is not written again: a segment of what the fold
        gained since is appended, unless a compaction (or a restore) rewrote the
        conversation or the segments piled up; then it is written whole."""
        fold = self._current_fold()
        if fold is None:
            return  # resumed and its conversation never read: the snapshot there is kept
        if pending_capture(self.latest) is not None:
            return  # its finisher looks for it after the snapshot
        if await self._save_segment(fold):
            return
        if self._base is None:
            data = resume_snapshot.snapshot_of(self._events, self.timeline, fold)
        else:
            last = self._tail[-1] if self._tail else None
            header = attrs.evolve(
                self._base,
                head=HeadMark.of(last) if last else self._base.head,
                turns=self.turns,
                assistant_messages=self.assistant_messages,
                cost=self.cost,
                model=self.model,
            )
            data = resume_snapshot.encode(header, fold)
        written = await resume_snapshot.save(self.store, self.id, data, self.head)
        head = self.latest[-1] if self.latest else None
        if written and head is not None:
            self._stored = (HeadMark.of(head), len(fold.messages), fold)
        elif written and self._base is not None:
            self._stored = (self._base.head, len(fold.messages), fold)
        else:
            self._stored = None

    async def _save_segment(self, fold: MessageFold) -> bool:
        """Append what ``fold`` gained since the stored snapshot; False when the
        snapshot is to be written whole."""
        if self._stored is None or self._stored[2] is not fold:
            return False
        mark, kept, _ = self._stored
        newer = self._after(mark)
        if newer is None or any(type(e) is ev.Compaction or changes_the_past(e) for e in newer):
            return False
        if not newer:
            return True  # the store holds it all already
        segment = resume_snapshot.segment_of(mark, HeadMark.of(newer[-1]), fold, kept)
        done = await resume_snapshot.save_segment(self.store, self.id, segment)
        if done is False:
            return False
        self._stored = (segment.head, len(fold.messages), fold) if done else None
        return True

    def _after(self, mark: HeadMark) -> list[ev.Event] | None:
        """The events held after ``mark``; None if it is not an event held here."""
        if self._base is not None:
            first = self._base.head.seq
            if mark == self._base.head:
                return self._tail
            at = mark.seq - first
            if 0 < at <= len(self._tail) and mark.matches(self._tail[at - 1]):
                return self._tail[at:]
            return None
        if 0 < mark.seq <= len(self._events) and mark.matches(self._events[mark.seq - 1]):
            return self._events[mark.seq :]
        return None

    async def truncate(self, seq: int) -> int:
        """Cut the log back to ``seq``; the truncation id (its events stay retrievable)."""
        await self.load()

        async def cut() -> int:
            async with self._lock:
                truncation = await self.store.truncate(self.id, seq, expected_head=self.head)
                del self._events[seq:]
                self._forget()
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
