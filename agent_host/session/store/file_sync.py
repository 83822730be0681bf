"""This process's view of a session's log, brought up to date under its lock.

A process keeps, per session, the log's byte size, the offset of each event and a
summary of them (:class:`~.log_file.LogState`); a sync reads only the bytes another
process appended since, cuts a torn tail a dead writer left, and a long log this
process has not read yet is first read from its end, when the session index agrees
with it.
"""

from __future__ import annotations

import os
import time
from array import array
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .. import events as ev
from ..errors import CorruptLogError
from . import file_snapshot, framing, log_file
from .ids import file_stem
from .log_file import LogState, decode_event
from .pacing import INLINE_READ_LIMIT, WouldBlock
from .summary import Summary

if TYPE_CHECKING:
    from .file_listing import FileListing

COLD_START_SIZE = 1 << 20
"""A log this long, not read yet, is first read from its end (see _cold_state)."""
TAIL = 1 << 62
"""``back_to`` for a sync that needs only the head: the log's last lines will do."""


class LogSync:
    """The sync of a FileCheckpointer's per-session views (``_states``)."""

    if TYPE_CHECKING:  # what FileCheckpointer provides
        root: Path
        _states: dict[str, LogState]
        _listing: FileListing

        def _log_path(self, session_id: str) -> str: ...

    def _sync(
        self,
        session_id: str,
        fd: int,
        wait: bool = True,
        repair: bool = True,
        back_to: int | None = 0,
    ) -> tuple[LogState, list[ev.Event]]:
        """Bring this process's view of the log up to date; return the new events.

        Holding the lock, any bytes past the last whole event belong to a writer
        that died mid-write: they are moved aside and the log cut back, unless not
        ``repair`` (see _reading), when they are read as not there. With
        ``wait=False``, a long read raises :class:`WouldBlock` before any change.

        A long log this process has not read yet is read from its end, back to
        event ``back_to`` at least, when the index agrees with it (see
        _cold_state); with ``back_to`` 0 or None it is read whole.
        """
        state = self._states.get(session_id)
        if state is None or not state.still_matches(fd):
            if not wait:
                raise WouldBlock(session_id)
            size = os.lseek(fd, 0, os.SEEK_END)
            state = self._cold_state(session_id, fd, size, back_to) if back_to else None
            if state is not None:
                self._states[session_id] = state
                return state, []
            state = LogState(0, size, array("q"), Summary())
            data = os.pread(fd, log_file.content_end(fd, size), 0)
        else:
            data, file_end = log_file.read_on(fd, state.size, None if wait else INLINE_READ_LIMIT)
            if file_end is not None:
                state.allocated = file_end
        if not data:
            self._states[session_id] = state
            return state, []
        where = self._log_path(session_id)
        found = framing.scan(data, partial(decode_event, where), where)
        first = state.summary.head + 1
        seqs = [event.seq for event in found.records]
        if seqs != list(range(first, first + len(seqs))):
            bad = next(s for n, s in enumerate(seqs, first) if s != n)
            raise CorruptLogError(
                f"{where}: event seq {bad} out of order after seq {first - 1}; "
                "the log was changed by something other than agent-host"
            )
        if state.summary.prompts is None and any(map(restores, found.records)):
            # A summary from the index cannot fold a restore (see Summary): read it all.
            return self._sync_whole(session_id, fd, repair)
        state.summary.extend(found.records)
        state.offsets.extend(state.size + offset for offset in found.offsets)
        if found.records:
            state.remember_last_line(fd)
        if found.torn and repair:
            end = state.size + found.end
            self._cut_torn_tail(session_id, fd, end, state.size + len(data))
            state.allocated = end
        state.size += found.end
        self._states[session_id] = state
        return state, found.records

    def _sync_whole(
        self, session_id: str, fd: int, repair: bool
    ) -> tuple[LogState, list[ev.Event]]:
        """Read the whole log afresh: every event, and a summary folded from them."""
        self._states.pop(session_id, None)
        return self._sync(session_id, fd, repair=repair, back_to=None)

    def _cold_state(self, session_id: str, fd: int, size: int, back_to: int) -> LogState | None:
        """This process's view of a long log it has not read, from the log's last
        lines and the index's record of the session, when the two agree (its head
        and last write); None to read the whole log.

        A resume then costs what its turn needs, not the log's length: the index
        is a cache of the logs, so a record that disagrees (a lost line, a writer
        that died) sends this back to the log.
        """
        if size < COLD_START_SIZE:
            return None
        where = self._log_path(session_id)
        found = file_snapshot.tail_records(fd, where, partial(decode_event, where), back_to)
        if found is None or not found[0]:
            return None
        events, offsets, end = found
        last = events[-1]
        # Looked up by its last write's time, the key the index is sorted by.
        info = self._listing.view.info(session_id, last.ts)
        if info is None or last.seq != info.head:
            return None
        summary = Summary(
            info.created_at,
            info.updated_at,
            info.title,
            info.turns,
            info.head,
            info.workspace,
            prompts=None,
        )
        state = LogState(end, size, array("q", offsets), summary, first=events[0].seq - 1)
        state.remember_last_line(fd)
        return state

    def _cut_torn_tail(self, session_id: str, fd: int, end: int, size: int) -> None:
        torn = self.root / "torn"
        torn.mkdir(mode=0o700, exist_ok=True)
        keep = torn / f"{file_stem(session_id)}.{time.time_ns()}.bin"
        keep.write_bytes(os.pread(fd, size - end, end))
        os.ftruncate(fd, end)
        os.fsync(fd)

    def _since(
        self,
        session_id: str,
        fd: int,
        state: LogState,
        new: list[ev.Event],
        since: int,
        repair: bool,
    ) -> list[ev.Event]:
        """The events after ``since``, just after a sync that read ``new``."""
        head = state.summary.head
        known = head - len(new)  # events this process had seen before the sync
        if since >= known:
            return new[since - known :]
        if since < state.first:
            state, new = self._sync_whole(session_id, fd, repair)
            return new[since:]
        end = state.offsets[known - state.first] if known < head else state.size
        return self._read_events(fd, session_id, state.offsets[since - state.first], end) + new

    def _read_events(self, fd: int, session_id: str, start: int, end: int) -> list[ev.Event]:
        where = self._log_path(session_id)
        data = os.pread(fd, end - start, start)
        return framing.scan(data, partial(decode_event, where), where).records


def restores(event: ev.Event) -> bool:
    return type(event) is ev.Restore or type(event) is ev.RestoreUndone
