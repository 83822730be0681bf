"""The checkpointer protocol every session store implements, and the base they share.

A store keeps each session as an append-only log of events numbered 1, 2, 3...
with no gaps. Writers that pass ``expected_head`` never fork a session: a stale
head raises :class:`CheckpointConflictError` and nothing is written.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

import orjson

from ..blobs import BlobStore
from ..errors import CheckpointConflictError, CheckpointNotFound, CorruptLogError
from ..events import Event, from_dict, from_dicts
from .ids import check_session_id
from .info import SessionInfo, Truncation
from .leases import waiting_lease

__all__ = [
    "Checkpointer",
    "ListCursor",
    "SessionInfo",
    "StoreBase",
    "Truncation",
    "check_events",
    "check_session_id",
]

T = TypeVar("T")
ListCursor = tuple[float, str]
"""Where a page of :meth:`StoreBase.list_page` ended: (updated_at, id) of its last row."""


def check_events(events: Sequence[Event]) -> None:
    for event in events:
        if not isinstance(event, Event):
            raise TypeError(f"append takes Event objects, got {type(event).__name__}")


class Checkpointer(Protocol):
    """A durable store of session logs. Every method is safe to call concurrently,
    from several tasks, threads and (for file, sqlite and postgres) processes --
    for postgres, on several hosts."""

    @property
    def blobs(self) -> BlobStore:
        """Content-addressed store for the file snapshots the events refer to."""
        ...

    @property
    def url(self) -> str:
        """The URL :func:`open_store` opens this same store by: ``file:///abs/dir``,
        ``sqlite:///abs/sessions.db``, ``postgresql://user@host/db`` (no password).
        A store that lives in this process only says ``memory:`` or
        ``sqlite:///:memory:``: opened again, that is a new, empty one."""
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

    async def list_page(
        self, limit: int, after: ListCursor | None = None
    ) -> builtins.list[SessionInfo]:
        """Up to ``limit`` sessions of :meth:`list`'s order, after the one whose
        (updated_at, id) is ``after``."""
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

    async def truncations(self, session_id: str) -> builtins.list[Truncation]:
        """Every truncation of the session, oldest first."""
        ...

    def turn_lease(
        self, session_id: str, wait: bool | float = False
    ) -> AbstractAsyncContextManager[None]:
        """Held while a turn (or a restore or compaction) changes the session.

        A second taker -- in this process or another, e.g. a second editor window on
        the same store -- gets :class:`TurnInProgress` at once, instead of appending
        into the middle of the running turn; with ``wait``, it waits for the lease
        (True: as long as it takes; seconds: at most that, then TurnInProgress). A
        crashed holder releases it.
        """
        ...

    async def close(self) -> None:
        """Release connections and handles; the store is unusable afterwards."""
        ...


class StoreBase:
    """What every backend shares: validation, the thread hop, decoding, the checks
    that must read the same in every store. A backend implements the primitives.

    The public methods (the :class:`Checkpointer` protocol) check the session id
    (InvalidSessionId before anything is touched) and the events (TypeError), then
    call the backend's primitive -- on a worker thread, or inline for a store whose
    primitives never block (``inline = True``: the memory store). The primitives get
    a valid session id and a list of events, and are called concurrently from
    several threads: each does its own locking.

    Primitives (blocking, on a worker thread unless ``inline``):

    ``_append(session_id, events, expected_head) -> int``
        In one transaction: find the head, call :meth:`check_head`, and (events not
        empty) write them numbered head+1... and stamped with one time; return the
        new head. All or nothing; an unknown session is created.
    ``_read(session_id, since_seq) -> list[Event]``
        Events with seq > since_seq in order; [] for an unknown session.
    ``_head(session_id) -> int``
    ``_list() -> list[SessionInfo]``
        Every session, most recently updated first.
    ``_delete(session_id) -> None``
        SessionNotFound if absent; the log and its truncations go.
    ``_truncate(session_id, seq, expected_head) -> Truncation``
        In one transaction: find the head (SessionNotFound for an unknown session),
        call :meth:`check_cut`, keep the events after ``seq`` as a new Truncation
        (ids from 1 per session) and cut them from the log.
    ``_truncations(session_id) -> list[Truncation]``
        Oldest first; [] for an unknown session.
    ``_lease(session_id) -> AbstractAsyncContextManager[None]``
        Called on the event loop; see :meth:`Checkpointer.turn_lease`.
    ``_close() -> None``

    Optional: ``_append_inline`` (an append that may run on the loop, see the file
    store's pacing), ``_list_page`` (keyset pagination in the database),
    ``on_change`` (news of appends made by other processes or hosts), and the
    resume snapshot (see session.resume_snapshot): ``_write_snapshot(session_id,
    head, data)`` keeps one blob per session, replacing the last and dropping its
    segments in the same durable step; ``_append_snapshot(session_id, data) ->
    (segments, their bytes, the snapshot's bytes) | None`` keeps a segment after it
    (None, appending nothing: there is no snapshot); and ``_read_snapshot(session_id,
    limit) -> (data, events) | None`` gives it back -- its first ``limit`` bytes, if
    not None, else the snapshot followed by its segments in the order appended --
    with the log's events from the snapshot's seq ``head`` on, read as one
    consistent view. A crash may tear the last segment (the reader stops there). The
    defaults keep none, which is always correct (a resume folds the log), only slower.

    Helpers for primitives: :meth:`check_head`, :meth:`check_cut`, :meth:`decode` (and
    :meth:`decode_many`),
    :meth:`decode_truncation` / :meth:`encode_truncation`, and ``where`` (the
    store as messages name it).
    """

    inline = False
    """Run the primitives on the event loop: only for stores that never block."""

    @property
    def where(self) -> str:
        return repr(self)

    # -- the protocol

    async def append(
        self, session_id: str, events: Sequence[Event], expected_head: int | None = None
    ) -> int:
        check_session_id(session_id)
        events = list(events)
        check_events(events)
        if events:
            done = self._append_inline(session_id, events, expected_head)
            if done is not None:
                return done
        return await self._call(self._append, session_id, events, expected_head)

    async def read(self, session_id: str, since_seq: int = 0) -> list[Event]:
        check_session_id(session_id)
        return await self._call(self._read, session_id, since_seq)

    async def head(self, session_id: str) -> int:
        check_session_id(session_id)
        return await self._call(self._head, session_id)

    async def list(self) -> list[SessionInfo]:
        return await self._call(self._list)

    async def list_page(
        self, limit: int, after: ListCursor | None = None
    ) -> builtins.list[SessionInfo]:
        """Up to ``limit`` sessions, newest first, starting after ``after`` (the
        updated_at and id of the previous page's last row): pages stay whole while
        sessions are written, a session that moves up is seen again on a later
        listing, never twice in one walk down."""
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        return await self._call(self._list_page, limit, after)

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        await self._call(self._delete, session_id)

    async def truncate(
        self, session_id: str, seq: int, expected_head: int | None = None
    ) -> Truncation:
        check_session_id(session_id)
        return await self._call(self._truncate, session_id, seq, expected_head)

    async def truncations(self, session_id: str) -> builtins.list[Truncation]:
        check_session_id(session_id)
        return await self._call(self._truncations, session_id)

    def turn_lease(
        self, session_id: str, wait: bool | float = False
    ) -> AbstractAsyncContextManager[None]:
        check_session_id(session_id)
        if wait is False:
            return self._lease(session_id)
        if isinstance(wait, bool | int | float) and wait >= 0:
            return waiting_lease(lambda: self._lease(session_id), wait)
        raise ValueError(f"wait must be True, False or seconds >= 0, not {wait!r}")

    async def write_snapshot(self, session_id: str, head: int, data: bytes) -> None:
        """Keep ``data``, the session's resume snapshot as of seq ``head``, in place
        of the last one. A cache of a fold of the log: not synced, and a crash may
        leave the old one, none, or a damaged one, which the reader detects."""
        check_session_id(session_id)
        await self._call(self._write_snapshot, session_id, head, data)

    async def append_snapshot(self, session_id: str, data: bytes) -> tuple[int, int, int] | None:
        """Keep ``data``, a segment of the session's resume snapshot, after the
        snapshot and its other segments: how many segments it has now, their bytes
        and the snapshot's; None (nothing kept) when it has no snapshot. Not synced,
        like the snapshot."""
        check_session_id(session_id)
        return await self._call(self._append_snapshot, session_id, data)

    async def read_snapshot(
        self, session_id: str, limit: int | None = None
    ) -> tuple[bytes, builtins.list[Event]] | None:
        """The session's snapshot (its first ``limit`` bytes, if given) and the log's
        events from its head's seq on (the first, if the log still has that seq, is
        the one it was taken at); None when there is none."""
        check_session_id(session_id)
        return await self._call(self._read_snapshot, session_id, limit)

    def on_change(self, callback: Callable[[str, int], None]) -> Callable[[], None]:
        """Call ``callback(session_id, head)`` (on a thread of the store's own) when
        another process appends to, truncates or deletes a session (head 0); return
        what stops it. Stores that cannot tell never call it."""
        return lambda: None

    async def close(self) -> None:
        await self._call(self._close)

    # -- shared semantics, for the primitives

    @staticmethod
    def check_head(session_id: str, expected_head: int | None, head: int) -> None:
        """CheckpointConflictError if the caller expected another head."""
        if expected_head is not None and expected_head != head:
            raise CheckpointConflictError(session_id, expected_head, head)

    @classmethod
    def check_cut(cls, session_id: str, seq: object, head: int, expected_head: int | None) -> None:
        """What truncate checks once it knows the head: the caller's head, then
        that ``seq`` is an int between 0 and the head (tests match this text)."""
        cls.check_head(session_id, expected_head, head)
        if not isinstance(seq, int) or not 0 <= seq <= head:
            raise CheckpointNotFound(
                f"cannot truncate session {session_id!r} to seq {seq!r}: "
                f"it must be between 0 and the head, {head}"
            )

    def decode(self, data: bytes | str) -> Event:
        """A stored event (its JSON) back as an Event; CorruptLogError naming the store."""
        try:
            return from_dict(orjson.loads(data))
        except Exception as exc:
            raise CorruptLogError(f"{self.where}: an event could not be read: {exc}") from exc

    def decode_many(self, datas: Sequence[bytes | str]) -> builtins.list[Event]:
        """:meth:`decode` for a log window at once (shares what the events repeat)."""
        try:
            return from_dicts([orjson.loads(d) for d in datas])
        except Exception as exc:
            raise CorruptLogError(f"{self.where}: an event could not be read: {exc}") from exc

    @staticmethod
    def encode_truncation(truncation_events: Sequence[bytes]) -> bytes:
        """The removed events' stored JSON as one JSON array."""
        return b"[" + b",".join(truncation_events) + b"]"

    def decode_truncation(self, tid: int, seq: int, ts: float, data: bytes | str) -> Truncation:
        try:
            events = [from_dict(d) for d in orjson.loads(data)]
        except Exception as exc:
            raise CorruptLogError(
                f"{self.where}: truncation {tid} could not be read: {exc}"
            ) from exc
        return Truncation(tid, seq, ts, events)

    # -- defaults for the optional primitives

    def _append_inline(
        self, session_id: str, events: builtins.list[Event], expected_head: int | None
    ) -> int | None:
        """An append done on the loop, or None to take the thread (the default)."""
        return None

    def _list_page(self, limit: int, after: ListCursor | None) -> builtins.list[SessionInfo]:
        rows = self._list()
        if after is not None:
            rows = [r for r in rows if (r.updated_at, r.id) < after]
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        return rows[:limit]

    def _close(self) -> None:
        return None

    def _write_snapshot(self, session_id: str, head: int, data: bytes) -> None:
        return None  # kept nowhere: every resume folds the log

    def _append_snapshot(self, session_id: str, data: bytes) -> tuple[int, int, int] | None:
        return None

    def _read_snapshot(
        self, session_id: str, limit: int | None
    ) -> tuple[bytes, builtins.list[Event]] | None:
        return None

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self.inline:
            return fn(*args)
        return await asyncio.to_thread(fn, *args)

    # The primitives: see the class docstring.
    def _append(
        self, session_id: str, events: builtins.list[Event], expected_head: int | None
    ) -> int:
        raise NotImplementedError

    def _read(self, session_id: str, since_seq: int) -> builtins.list[Event]:
        raise NotImplementedError

    def _head(self, session_id: str) -> int:
        raise NotImplementedError

    def _list(self) -> builtins.list[SessionInfo]:
        raise NotImplementedError

    def _delete(self, session_id: str) -> None:
        raise NotImplementedError

    def _truncate(self, session_id: str, seq: int, expected_head: int | None) -> Truncation:
        raise NotImplementedError

    def _truncations(self, session_id: str) -> builtins.list[Truncation]:
        raise NotImplementedError

    def _lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        raise NotImplementedError
