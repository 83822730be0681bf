"""A store object of six methods -- LiteAgent's checkpointer contract -- as a full store.

An object with ``append``, ``read``, ``head``, ``list``, ``delete`` and ``truncate``
(async or not; the signatures are :class:`Checkpointer`'s) works wherever a store
is accepted (``AgentHost(store=obj)``, ``AgentHostSession(id, obj)``, the harness
facades). What the engine needs beyond those six, the adapter supplies:

- **blobs** (the file snapshots restore writes back): the object's own ``blobs`` if
  it has one, else a folder the caller names with :func:`adapt` (``blobs=``), else
  an in-memory blob store, which lives as long as this process.
- **turn leases**: in this process only (a set of the sessions whose turn runs, as
  the memory store's): two processes on one object's backing storage are not kept
  apart.
- **truncations** (what ``pop_item``, ``clear_session`` and a restore cut, for
  their undo): kept by the adapter in this process; after a restart they are
  gone, and an undo that needs one says so (UndoUnavailable).
- ``list_page`` is :meth:`list` cut into pages; no resume snapshot is kept (a
  resume folds the log); ``url`` is the object's own, else ``memory:`` (a State
  of it resumes only in this process, given the object again).

The adapter stamps each event with its seq and time and passes the head it read
as ``expected_head``, so a conflicting writer is a CheckpointConflictError (a
caller that gave no head is retried), never a forked log. Every use of one object
in a process gets the same adapter: its blobs, leases and truncations are shared
by every host over it.
"""

from __future__ import annotations

import builtins
import inspect
import os
import threading
import time
import weakref
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from .. import events as ev
from ..blobs import BlobStore, FileBlobStore, MemoryBlobStore
from ..errors import CheckpointConflictError, IncompleteStore, SessionNotFound
from .base import ListCursor, SessionInfo, StoreBase, Truncation, check_events, check_session_id
from .leases import LocalLeases
from .summary import summarize

__all__ = ["REQUIRED", "AdaptedCheckpointer", "adapt", "as_checkpointer"]

REQUIRED: dict[str, str] = {
    "append": "append(session_id, events, expected_head=None) -> int: keep the events "
    "(already numbered head+1... and stamped) all or none, return the new head; "
    "CheckpointConflictError and nothing kept when the head is not expected_head",
    "read": "read(session_id, since_seq=0) -> list[Event]: the events with seq > "
    "since_seq, in order; [] for an unknown session",
    "head": "head(session_id) -> int: the last event's seq; 0 for an unknown session",
    "list": "list() -> every session, as SessionInfo rows or session ids",
    "delete": "delete(session_id): remove the session and its events",
    "truncate": "truncate(session_id, seq, expected_head=None): drop the events with "
    "seq > seq; CheckpointConflictError when the head is not expected_head",
}
"""The six methods a store object must have, and what each must do."""

_WHOLE = (*REQUIRED, "blobs", "list_page", "truncations", "turn_lease", "close")
"""What makes an object a whole :class:`Checkpointer`, used as it is (``url`` is
optional: a store without one is only never named in a State)."""

_adapters: weakref.WeakKeyDictionary[Any, AdaptedCheckpointer] = weakref.WeakKeyDictionary()
_pinned: dict[int, tuple[Any, AdaptedCheckpointer]] = {}
"""Adapters of objects that cannot be weakly referenced, kept with their object."""
_mutex = threading.Lock()


def as_checkpointer(store: object) -> Any:
    """``store`` itself if it is a whole store; this process's adapter of it if it has
    the six methods; else IncompleteStore naming what is missing."""
    if all(hasattr(store, name) for name in _WHOLE):
        return store
    return adapt(store)


def adapt(
    store: object, blobs: str | os.PathLike[str] | BlobStore | None = None
) -> AdaptedCheckpointer:
    """The adapter of a six-method store object (see the module's docstring).

    ``blobs``: a folder to keep the file snapshots in (or a BlobStore); None: the
    object's own ``blobs``, else the blobs of the adapter this process already made
    for it, else in memory. Asked again for the same object, gives the same adapter
    unless ``blobs`` names another place."""
    missing = [name for name in REQUIRED if not callable(getattr(store, name, None))]
    if missing:
        raise IncompleteStore(
            f"{type(store).__name__} is not a usable store: it has no "
            + ", ".join(missing)
            + ". A store object needs these methods (async or not): "
            + "; ".join(REQUIRED[name] for name in missing)
            + ". Or pass a store URL or folder.",
            missing,
        )
    with _mutex:
        known = _known(store)
        if known is not None and blobs is None:
            return known
        made = AdaptedCheckpointer(store, _blob_store(store, blobs))
        try:
            _adapters[store] = made
        except TypeError:  # no weak reference to it (or unhashable): keep it alive
            _pinned[id(store)] = (store, made)
        return made


def _known(store: object) -> AdaptedCheckpointer | None:
    try:
        found = _adapters.get(store)
    except TypeError:
        found = None
    if found is None and id(store) in _pinned:
        found = _pinned[id(store)][1]
    return found


def _blob_store(store: object, blobs: str | os.PathLike[str] | BlobStore | None) -> BlobStore:
    if blobs is None:
        own = getattr(store, "blobs", None)
        return own if own is not None else MemoryBlobStore()
    if isinstance(blobs, str | os.PathLike):
        return FileBlobStore(blobs)
    return blobs


async def _result(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class AdaptedCheckpointer(StoreBase):
    """A six-method store object as a :class:`Checkpointer`; see :func:`adapt`."""

    inline = True  # the optional primitives StoreBase still calls never block

    def __init__(self, store: Any, blobs: BlobStore) -> None:
        self.wrapped = store
        self.blobs = blobs
        self._leases = LocalLeases()
        self._cuts: dict[str, builtins.list[Truncation]] = {}

    def __repr__(self) -> str:
        return f"AdaptedCheckpointer({type(self.wrapped).__name__})"

    @property
    def url(self) -> str:
        own = getattr(self.wrapped, "url", None)
        return own if isinstance(own, str) else "memory:"

    def _copy(self, event: ev.Event, seq: int | None = None, ts: float | None = None) -> ev.Event:
        """The event as the log keeps it: never the caller's object, which it may change."""
        return self.decode(ev.encode(event, seq, ts))

    async def append(
        self, session_id: str, events: Sequence[ev.Event], expected_head: int | None = None
    ) -> int:
        check_session_id(session_id)
        events = builtins.list(events)
        check_events(events)
        while True:
            head = await self.head(session_id)
            self.check_head(session_id, expected_head, head)
            if not events:
                return head
            ts = time.time()
            # Encoded before any is handed over: one that cannot be written keeps none.
            stamped = [self._copy(e, head + n, ts) for n, e in enumerate(events, 1)]
            try:
                await _result(self.wrapped.append(session_id, stamped, expected_head=head))
            except CheckpointConflictError:
                if expected_head is not None:
                    raise
                continue  # another writer came first and the caller named no head
            return head + len(stamped)

    async def read(self, session_id: str, since_seq: int = 0) -> builtins.list[ev.Event]:
        check_session_id(session_id)
        events = await _result(self.wrapped.read(session_id, since_seq))
        # Copies, as a durable store's reads are (decoded together: they share much).
        return self.decode_many([ev.encode(e) for e in events if e.seq > since_seq])

    async def head(self, session_id: str) -> int:
        check_session_id(session_id)
        return int(await _result(self.wrapped.head(session_id)))

    async def list(self) -> builtins.list[SessionInfo]:
        infos = []
        for row in await _result(self.wrapped.list()):
            if isinstance(row, SessionInfo):
                infos.append(row)
            else:  # a session id: its row is folded from its log
                infos.append(summarize(await self.read(str(row))).info(str(row)))
        return sorted(infos, key=lambda i: -i.updated_at)

    async def list_page(
        self, limit: int, after: ListCursor | None = None
    ) -> builtins.list[SessionInfo]:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        rows = await self.list()
        if after is not None:
            rows = [r for r in rows if (r.updated_at, r.id) < after]
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        return rows[:limit]

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        if await self.head(session_id) == 0:
            raise SessionNotFound(session_id)
        await _result(self.wrapped.delete(session_id))
        self._cuts.pop(session_id, None)

    async def truncate(
        self, session_id: str, seq: int, expected_head: int | None = None
    ) -> Truncation:
        check_session_id(session_id)
        head = await self.head(session_id)
        if head == 0:  # no store keeps an empty session: appending nothing makes none
            raise SessionNotFound(session_id)
        self.check_cut(session_id, seq, head, expected_head)
        removed = await self.read(session_id, seq)
        # The head just read, so events appended meanwhile conflict instead of
        # being cut unseen (and missing from the truncation).
        await _result(self.wrapped.truncate(session_id, seq, expected_head=head))
        kept = self._cuts.setdefault(session_id, [])
        truncation = Truncation(len(kept) + 1, seq, time.time(), removed)
        kept.append(truncation)
        return truncation

    async def truncations(self, session_id: str) -> builtins.list[Truncation]:
        check_session_id(session_id)
        kept = self._cuts.get(session_id, [])
        return [Truncation(t.id, t.seq, t.ts, [self._copy(e) for e in t.events]) for t in kept]

    def _lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        return self._leases.hold(session_id)

    async def close(self) -> None:
        """Nothing: the object is the caller's, and so is closing it."""
