"""A store that lives in this process only: for ``sessions: false`` and tests.

Events are kept encoded, as the durable stores keep them, so what a caller reads
back is a copy that behaves exactly as it would from disk.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

import attrs
import orjson

from .. import events as ev
from ..blobs import MemoryBlobStore
from ..errors import CheckpointConflictError, CheckpointNotFound, SessionNotFound
from .base import (
    LocalLeases,
    SessionInfo,
    Summary,
    Truncation,
    check_events,
    check_session_id,
    summarize,
)


@attrs.define
class _Session:
    log: list[bytes] = attrs.field(factory=list)
    summary: Summary = attrs.field(factory=Summary)
    truncations: list[bytes] = attrs.field(factory=list)


class MemoryCheckpointer:
    def __init__(self) -> None:
        self.blobs = MemoryBlobStore()
        self._sessions: dict[str, _Session] = {}
        self._leases = LocalLeases()

    def __repr__(self) -> str:
        return "MemoryCheckpointer()"

    @property
    def url(self) -> str:
        return "memory:"

    async def append(
        self, session_id: str, events: Sequence[ev.Event], expected_head: int | None = None
    ) -> int:
        check_session_id(session_id)
        check_events(events)
        session = self._sessions.get(session_id) or _Session()
        head = session.summary.head
        if expected_head is not None and expected_head != head:
            raise CheckpointConflictError(session_id, expected_head, head)
        if not events:
            return head
        ts = time.time()
        # Encode every event before storing any, so a bad one stores none.
        encoded = [ev.encode(e, head + n, ts) for n, e in enumerate(events, 1)]
        for data in encoded:
            session.summary.add(ev.decode(data))
        session.log.extend(encoded)
        self._sessions[session_id] = session
        return session.summary.head

    async def read(self, session_id: str, since_seq: int = 0) -> list[ev.Event]:
        check_session_id(session_id)
        session = self._sessions.get(session_id)
        if session is None:
            return []
        return [ev.decode(data) for data in session.log[max(since_seq, 0) :]]

    async def head(self, session_id: str) -> int:
        check_session_id(session_id)
        session = self._sessions.get(session_id)
        return session.summary.head if session else 0

    async def list(self) -> list[SessionInfo]:
        infos = [s.summary.info(sid) for sid, s in self._sessions.items()]
        return sorted(infos, key=lambda i: -i.updated_at)

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        if self._sessions.pop(session_id, None) is None:
            raise SessionNotFound(session_id)

    async def truncate(
        self, session_id: str, seq: int, expected_head: int | None = None
    ) -> Truncation:
        check_session_id(session_id)
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        head = session.summary.head
        if expected_head is not None and expected_head != head:
            raise CheckpointConflictError(session_id, expected_head, head)
        if not isinstance(seq, int) or not 0 <= seq <= head:
            raise CheckpointNotFound(
                f"cannot truncate session {session_id!r} to seq {seq!r}: "
                f"it must be between 0 and the head, {head}"
            )
        removed = session.log[seq:]
        truncation = Truncation(
            len(session.truncations) + 1, seq, time.time(), [ev.decode(d) for d in removed]
        )
        session.truncations.append(
            orjson.dumps(
                {
                    "id": truncation.id,
                    "seq": seq,
                    "ts": truncation.ts,
                    "events": [orjson.loads(d) for d in removed],
                }
            )
        )
        del session.log[seq:]
        session.summary = summarize(ev.decode(d) for d in session.log)
        return truncation

    async def truncations(self, session_id: str) -> list[Truncation]:
        check_session_id(session_id)
        session = self._sessions.get(session_id)
        if session is None:
            return []
        out = []
        for raw in session.truncations:
            data = orjson.loads(raw)
            out.append(
                Truncation(
                    data["id"], data["seq"], data["ts"], [ev.from_dict(e) for e in data["events"]]
                )
            )
        return out

    def turn_lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        check_session_id(session_id)
        return self._leases.hold(session_id)

    async def close(self) -> None:
        return None
