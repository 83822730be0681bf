"""The checkpointer protocol every session store implements, and what they share.

A store keeps each session as an append-only log of events numbered 1, 2, 3...
with no gaps. Writers that pass ``expected_head`` never fork a session: a stale
head raises :class:`CheckpointConflictError` and nothing is written.
"""

from __future__ import annotations

import os
import re
import threading
from array import array
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

import attrs

from ..blobs import BlobStore
from ..errors import InvalidSessionId, TurnInProgress
from ..events import Event, Restore, RestoreUndone, SessionStarted, UserPrompt
from . import locking

_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
TITLE_LENGTH = 80


def check_session_id(session_id: object) -> str:
    """``session_id`` if it is 1-128 letters, digits, '-' or '_'; else InvalidSessionId."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        shown = repr(session_id)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise InvalidSessionId(f"invalid session id {shown}: use 1-128 letters, digits, '-' or '_'")
    return session_id


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


def check_events(events: Sequence[Event]) -> None:
    for event in events:
        if not isinstance(event, Event):
            raise TypeError(f"append takes Event objects, got {type(event).__name__}")


@attrs.define(slots=True)
class SessionInfo:
    """One row of :meth:`Checkpointer.list`. Times are UNIX seconds."""

    id: str
    created_at: float
    updated_at: float
    head: int
    turns: int
    title: str
    workspace: str = ""
    """The folder the session was started in (its SessionStarted), "" if unknown."""


@attrs.define(slots=True)
class Truncation:
    """Events removed by :meth:`Checkpointer.truncate`, kept so the cut can be undone.

    ``id`` counts truncations of one session from 1; ``seq`` is the head the log
    was cut back to; ``events`` are what was removed, with their original seqs.
    """

    id: int
    seq: int
    ts: float
    events: list[Event]


@attrs.define(slots=True)
class Summary:
    """What a store's session index keeps, folded from the log.

    ``turns`` counts the prompts of the session's timeline: a restore that takes
    the conversation back hides the prompts after its point and its undo shows
    them again (see session.timeline), so the fold keeps the seqs of the visible
    prompts. A summary loaded from an index row has no such list
    (``prompts=None``); its owner folds the log again before adding a restore.
    """

    created_at: float = 0.0
    updated_at: float = 0.0
    title: str = ""
    turns: int = 0
    head: int = 0
    workspace: str = ""
    prompts: array | None = attrs.field(factory=lambda: array("q"))
    _before: tuple[int, array] | None = None
    """The last restore's seq and the prompts visible before it, for its undo."""

    def add(self, event: Event) -> None:
        """Fold one stored event into the summary."""
        self.add_as(event, event.seq, event.ts)

    def add_new(self, events: Iterable[Event], first_seq: int, ts: float) -> None:
        """Fold events just appended, numbered from ``first_seq``, all stamped ``ts``."""
        for seq, event in enumerate(events, first_seq):
            self.add_as(event, seq, ts)

    def add_as(self, event: Event, seq: int, ts: float) -> None:
        if self.head == 0:
            self.created_at = ts
        self.head = seq
        self.updated_at = ts
        if type(event) is UserPrompt:
            self.turns += 1
            if self.prompts is not None:
                self.prompts.append(seq)
            if not self.title:
                self.title = make_title(event.text)
        elif type(event) is Restore or type(event) is RestoreUndone:
            self._restore(event, seq)
        elif type(event) is SessionStarted:
            if event.title:
                self.title = make_title(event.title)
            if event.workspace:
                self.workspace = event.workspace

    def _restore(self, event: Event, seq: int) -> None:
        if self.prompts is None:
            return  # unknown: the owner folds the whole log instead
        if type(event) is RestoreUndone:
            if self._before is not None and self._before[0] == event.restore_seq:
                self.prompts = self._before[1]
                self._before = None
        else:
            self._before = (seq, self.prompts)
            if event.conversation and event.truncation is None:
                self.prompts = array("q", (p for p in self.prompts if p <= event.to_seq))
            else:
                self.prompts = array("q", self.prompts)
        self.turns = len(self.prompts)

    def extend(self, events: Sequence[Event]) -> None:
        """Fold stored events in, as :meth:`add` each would, in a few passes (a resume
        folds every event of the log)."""
        if not events:
            return
        starts = [e for e in events if type(e) is SessionStarted]
        restores = any(type(e) is Restore or type(e) is RestoreUndone for e in events)
        if restores or len(starts) > 1 or (starts and starts[0] is not events[0]):
            for event in events:  # a start after other events: fold them in order
                self.add(event)
            return
        if starts:
            self.add(starts[0])  # the log's first event: before every prompt
        if self.head == 0:
            self.created_at = events[0].ts
        last = events[-1]
        self.head, self.updated_at = last.seq, last.ts
        prompts = [e for e in events if type(e) is UserPrompt]
        self.turns += len(prompts)
        if self.prompts is not None:
            self.prompts.extend(p.seq for p in prompts)
        for prompt in prompts if not self.title else ():
            self.title = make_title(prompt.text)  # a blank prompt leaves it unset
            if self.title:
                break

    def info(self, session_id: str) -> SessionInfo:
        return SessionInfo(
            session_id,
            self.created_at,
            self.updated_at,
            self.head,
            self.turns,
            self.title,
            self.workspace,
        )


def summarize(events: Iterable[Event]) -> Summary:
    summary = Summary()
    summary.extend(list(events))
    return summary


def make_title(text: str) -> str:
    """A prompt as a one-line title: whitespace collapsed, cut at a word near 80 chars."""
    line = " ".join(text.split())
    if len(line) <= TITLE_LENGTH:
        return line
    cut = line[: TITLE_LENGTH - 1]
    space = cut.rfind(" ")
    if space > TITLE_LENGTH // 2:
        cut = cut[:space]
    return cut + "…"


class Checkpointer(Protocol):
    """A durable store of session logs. Every method is safe to call concurrently,
    from several tasks, threads and (for file and sqlite) processes."""

    blobs: BlobStore
    """Content-addressed store for the file snapshots the events refer to."""

    @property
    def url(self) -> str:
        """The URL :func:`open_store` opens this same store by: ``file:///abs/dir``,
        ``sqlite:///abs/sessions.db``. A store that lives in this process only says
        ``memory:`` or ``sqlite:///:memory:``: opened again, that is a new, empty one."""
        ...

    async def append(
        self, session_id: str, events: Sequence[Event], expected_head: int | None = None
    ) -> int:
        """Append ``events`` atomically and durably; return the new head seq.

        All events are written or none. The store assigns each a seq (head+1, ...)
        and a timestamp. When ``expected_head`` is given and the session's head is
        not that, raise :class:`CheckpointConflictError` and write nothing.
        Appending to an unknown session creates it.
        """
        ...

    async def read(self, session_id: str, since_seq: int = 0) -> list[Event]:
        """Events with seq > ``since_seq``, in order; [] for an unknown session."""
        ...

    async def head(self, session_id: str) -> int:
        """The seq of the last event; 0 for an empty or unknown session."""
        ...

    async def list(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        ...

    async def delete(self, session_id: str) -> None:
        """Remove the session, its log and its truncations; SessionNotFound if absent."""
        ...

    async def truncate(
        self, session_id: str, seq: int, expected_head: int | None = None
    ) -> Truncation:
        """Drop events with seq > ``seq``, keeping them in a new :class:`Truncation`.

        ``seq`` must be between 0 and the head (CheckpointNotFound otherwise).
        """
        ...

    async def truncations(self, session_id: str) -> list[Truncation]:
        """Every truncation of the session, oldest first."""
        ...

    def turn_lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """Held while a turn (or a restore or compaction) changes the session.

        A second taker -- in this process or another, e.g. a second editor window on
        the same store -- gets :class:`TurnInProgress` at once, instead of appending
        into the middle of the running turn. A crashed holder releases it.
        """
        ...

    async def close(self) -> None:
        """Release connections and handles; the store is unusable afterwards."""
        ...
