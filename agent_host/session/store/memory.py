"""A store that lives in this process only: for ``sessions: false`` and tests.

Events are kept encoded, as the durable stores keep them, so what a caller reads
back is a copy that behaves exactly as it would from disk.
"""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager

import attrs

from .. import events as ev
from ..blobs import MemoryBlobStore
from ..errors import SessionNotFound
from .base import SessionInfo, StoreBase, Truncation
from .leases import LocalLeases
from .summary import Summary, summarize


@attrs.define
class _Session:
    log: list[bytes] = attrs.field(factory=list)
    summary: Summary = attrs.field(factory=Summary)
    truncations: list[tuple[int, int, float, bytes]] = attrs.field(factory=list)
    snapshot: tuple[int, bytes] | None = None
    segments: list[bytes] = attrs.field(factory=list)


class MemoryCheckpointer(StoreBase):
    inline = True  # nothing here blocks: no thread hop

    def __init__(self) -> None:
        self.blobs = MemoryBlobStore()
        self._sessions: dict[str, _Session] = {}
        self._leases = LocalLeases()

    def __repr__(self) -> str:
        return "MemoryCheckpointer()"

    @property
    def url(self) -> str:
        return "memory:"

    def _append(self, session_id: str, events: list[ev.Event], expected_head: int | None) -> int:
        session = self._sessions.get(session_id) or _Session()
        head = session.summary.head
        self.check_head(session_id, expected_head, head)
        if not events:
            return head
        ts = time.time()
        # Encode every event before storing any, so a bad one stores none.
        encoded = [ev.encode(e, head + n, ts) for n, e in enumerate(events, 1)]
        for data in encoded:
            session.summary.add(self.decode(data))
        session.log.extend(encoded)
        self._sessions[session_id] = session
        return session.summary.head

    def _read(self, session_id: str, since_seq: int) -> list[ev.Event]:
        session = self._sessions.get(session_id)
        if session is None:
            return []
        return [self.decode(data) for data in session.log[max(since_seq, 0) :]]

    def _head(self, session_id: str) -> int:
        session = self._sessions.get(session_id)
        return session.summary.head if session else 0

    def _list(self) -> list[SessionInfo]:
        infos = [s.summary.info(sid) for sid, s in self._sessions.items()]
        return sorted(infos, key=lambda i: -i.updated_at)

    def _delete(self, session_id: str) -> None:
        if self._sessions.pop(session_id, None) is None:
            raise SessionNotFound(session_id)

    def _truncate(self, session_id: str, seq: int, expected_head: int | None) -> Truncation:
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        self.check_cut(session_id, seq, session.summary.head, expected_head)
        removed = session.log[seq:]
        kept = (len(session.truncations) + 1, seq, time.time(), self.encode_truncation(removed))
        session.truncations.append(kept)
        del session.log[seq:]
        session.summary = summarize(self.decode(d) for d in session.log)
        return self.decode_truncation(*kept)

    def _truncations(self, session_id: str) -> list[Truncation]:
        session = self._sessions.get(session_id)
        return [self.decode_truncation(*t) for t in session.truncations] if session else []

    def _write_snapshot(self, session_id: str, head: int, data: bytes) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.snapshot = (head, bytes(data))
            session.segments = []

    def _append_snapshot(self, session_id: str, data: bytes) -> tuple[int, int, int] | None:
        session = self._sessions.get(session_id)
        if session is None or session.snapshot is None:
            return None
        session.segments.append(bytes(data))
        return len(session.segments), sum(map(len, session.segments)), len(session.snapshot[1])

    def _read_snapshot(
        self, session_id: str, limit: int | None
    ) -> tuple[bytes, list[ev.Event]] | None:
        session = self._sessions.get(session_id)
        if session is None or session.snapshot is None:
            return None
        head, data = session.snapshot
        if limit is None:
            data += b"".join(session.segments)
        return data[:limit], self._read(session_id, head - 1)

    def _lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        return self._leases.hold(session_id)


def open_url(text: str, parts: object) -> MemoryCheckpointer:
    """The store for ``memory:``: a new, empty one each time."""
    return MemoryCheckpointer()
