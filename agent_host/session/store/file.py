"""The default store: one checksummed JSON Lines log per session.

Layout under the store's root (folders 0700, files 0600)::

    sessions/<id>.jsonl    the log, one framed event per line
    truncated/<id>.jsonl   what truncate() removed, one framed Truncation per line
    locks/<id>.lock        the per-session lock (filelock)
    torn/                  bytes cut from a torn tail, kept for inspection
    index.jsonl            the session index (see file_index)
    blobs/                 file snapshots (see blobs)

Every operation on a session holds its lock, so readers see whole appends and
writers in several processes take turns. ``append`` returns after fdatasync. A
process keeps, per session, the byte size and event offsets it last saw; under the
lock it re-reads only bytes another process added since, so an append costs one
write and one fdatasync however long the log.
"""

from __future__ import annotations

import asyncio
import os
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from .. import events as ev
from ..blobs import FileBlobStore
from ..durable import fsync_dir, write_atomically
from ..errors import (
    CheckpointConflictError,
    CheckpointNotFound,
    CorruptLogError,
    SessionNotFound,
)
from . import file_index, file_stash, framing, locking, log_file
from .base import (
    SessionInfo,
    Summary,
    Truncation,
    check_events,
    check_session_id,
    file_lease,
    summarize,
)
from .file_index import SessionIndex, compact_threshold
from .log_file import LogState
from .pacing import INLINE_READ_LIMIT, INLINE_WRITE_LIMIT, SyncPacer, WouldBlock

T = TypeVar("T")


class FileCheckpointer:
    """Session logs as files under ``root``; several processes may share it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().absolute()
        # Plain strings: pathlib costs more per append than the lock does.
        self._sessions_dir = os.path.join(self.root, "sessions")
        self._locks_dir = os.path.join(self.root, "locks")
        self._made_dirs = False
        self.blobs = FileBlobStore(self.root / "blobs")
        self._index = SessionIndex(self.root)
        self._states: dict[str, LogState] = {}
        self._pacer = SyncPacer()

    def __repr__(self) -> str:
        return f"FileCheckpointer({str(self.root)!r})"

    # -- async API: each call runs on a worker thread, holding the session lock,
    # except a short append while the disk is fast (see pacing).

    async def append(
        self, session_id: str, events: Sequence[ev.Event], expected_head: int | None = None
    ) -> int:
        check_session_id(session_id)
        check_events(events)
        events = list(events)
        if events and self._pacer.inline() and session_id in self._states:
            try:
                return self._append(session_id, events, expected_head, wait=False)
            except WouldBlock:
                pass  # nothing was written: the thread does the whole append
        return await _run(self._append, session_id, events, expected_head)

    async def read(self, session_id: str, since_seq: int = 0) -> list[ev.Event]:
        check_session_id(session_id)
        return await _run(self._read, session_id, since_seq)

    async def head(self, session_id: str) -> int:
        check_session_id(session_id)
        return await _run(self._head, session_id)

    async def list(self) -> list[SessionInfo]:
        return await _run(self._list)

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        await _run(self._delete, session_id)

    async def truncate(
        self, session_id: str, seq: int, expected_head: int | None = None
    ) -> Truncation:
        check_session_id(session_id)
        return await _run(self._truncate, session_id, seq, expected_head)

    async def truncations(self, session_id: str) -> list[Truncation]:
        check_session_id(session_id)
        return await _run(self._truncations, session_id)

    def turn_lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        check_session_id(session_id)
        self._make_dirs()
        return file_lease(f"{self._locks_dir}/{session_id}.turn", session_id)

    async def close(self) -> None:
        self._states.clear()
        self._index.close()

    # -- paths and locks

    def _log_path(self, session_id: str) -> str:
        return f"{self._sessions_dir}/{session_id}.jsonl"

    def _stash_path(self, session_id: str) -> Path:
        return self.root / "truncated" / f"{session_id}.jsonl"

    @contextmanager
    def _locked(
        self, session_id: str, create: bool = False, wait: bool = True
    ) -> Iterator[int | None]:
        """Hold the session's lock; yield its log opened read-write (None if absent)."""
        known = session_id in self._states
        if not create and not known and not os.path.exists(self._log_path(session_id)):
            # Reading a session that does not exist creates nothing, not even a lock.
            # (Not checked for a log this process has seen: its lock file exists, and
            # a stat of the log would slow its next sync; see LogState.still_matches.)
            self._states.pop(session_id, None)
            yield None
            return
        self._make_dirs()
        with locking.hold(f"{self._locks_dir}/{session_id}.lock", wait=wait):
            # Not O_APPEND: appends write over the zeros past the content (log_file).
            flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
            try:
                fd = os.open(self._log_path(session_id), flags, 0o600)
            except FileNotFoundError:
                self._states.pop(session_id, None)
                yield None
                return
            try:
                yield fd
            finally:
                os.close(fd)

    def _make_dirs(self) -> None:
        # Created on first write, so reading a mistyped store path leaves no trace.
        if not self._made_dirs:
            for sub in ("", "sessions", "truncated", "locks"):
                (self.root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
            self._made_dirs = True

    # -- the log

    def _sync(self, session_id: str, fd: int, wait: bool = True) -> tuple[LogState, list[ev.Event]]:
        """Bring this process's view of the log up to date; return the new events.

        Holding the lock, any bytes past the last whole event belong to a writer
        that died mid-write: they are moved aside and the log cut back. With
        ``wait=False``, a long read raises :class:`WouldBlock` before any change.
        """
        state = self._states.get(session_id)
        if state is None or not state.still_matches(fd):
            if not wait:
                raise WouldBlock(session_id)
            size = os.lseek(fd, 0, os.SEEK_END)
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
        found = framing.scan(data, partial(_decode_event, where), where)
        first = state.summary.head + 1
        seqs = [event.seq for event in found.records]
        if seqs != list(range(first, first + len(seqs))):
            bad = next(s for n, s in enumerate(seqs, first) if s != n)
            raise CorruptLogError(
                f"{where}: event seq {bad} out of order after seq {first - 1}; "
                "the log was changed by something other than agent-host"
            )
        state.summary.extend(found.records)
        state.offsets.extend(state.size + offset for offset in found.offsets)
        if found.records:
            state.remember_last_line(fd)
        if found.torn:
            end = state.size + found.end
            self._cut_torn_tail(session_id, fd, end, state.size + len(data))
            state.allocated = end
        state.size += found.end
        self._states[session_id] = state
        return state, found.records

    def _cut_torn_tail(self, session_id: str, fd: int, end: int, size: int) -> None:
        torn = self.root / "torn"
        torn.mkdir(mode=0o700, exist_ok=True)
        keep = torn / f"{session_id}.{time.time_ns()}.bin"
        keep.write_bytes(os.pread(fd, size - end, end))
        os.ftruncate(fd, end)
        os.fsync(fd)

    def _append(
        self,
        session_id: str,
        events: list[ev.Event],
        expected_head: int | None,
        wait: bool = True,
    ) -> int:
        with self._locked(session_id, create=bool(events) and wait, wait=wait) as fd:
            if fd is None:
                if not wait:
                    raise WouldBlock(session_id)  # a new log: made on the thread
                if expected_head is not None and expected_head != 0:
                    raise CheckpointConflictError(session_id, expected_head, 0)
                return 0  # nothing to write to a session that does not exist
            state, _ = self._sync(session_id, fd, wait)
            head = state.summary.head
            if expected_head is not None and expected_head != head:
                raise CheckpointConflictError(session_id, expected_head, head)
            if not events:
                return head
            ts = time.time()
            payloads = [ev.encode(e, head + n, ts) for n, e in enumerate(events, 1)]
            lines = framing.frame_batch(payloads)
            data = b"".join(lines)
            if not wait and len(data) > INLINE_WRITE_LIMIT:
                raise WouldBlock(session_id)  # copying that much would hold the loop
            with self._index.writing(wait):
                self._index.pending(session_id)
                started = time.perf_counter()
                state.allocated = log_file.write_at(fd, data, state.size, state.allocated)
                self._pacer.observe(time.perf_counter() - started)
                if state.size == 0:
                    fsync_dir(self.root / "sessions")
                for line in lines:
                    state.offsets.append(state.size)
                    state.size += len(line)
                state.summary.add_new(events, head + 1, ts)
                state.mark = lines[-1][: log_file.MARK]
                self._index.record(session_id, state.summary)
            return state.summary.head

    def _read(self, session_id: str, since_seq: int) -> list[ev.Event]:
        since = max(since_seq, 0)
        with self._locked(session_id) as fd:
            if fd is None:
                return []
            state, new = self._sync(session_id, fd)
            head = state.summary.head
            known = head - len(new)  # events this process had seen before the sync
            if since >= known:
                return new[since - known :]
            end = state.offsets[known] if known < head else state.size
            return self._read_events(fd, session_id, state.offsets[since], end) + new

    def _head(self, session_id: str) -> int:
        with self._locked(session_id) as fd:
            if fd is None:
                return 0
            return self._sync(session_id, fd)[0].summary.head

    def _delete(self, session_id: str) -> None:
        with self._locked(session_id) as fd:
            if fd is None:
                raise SessionNotFound(session_id)
            with self._index.writing():
                self._index.pending(session_id)
                os.unlink(self._log_path(session_id))
                self._stash_path(session_id).unlink(missing_ok=True)
                fsync_dir(self.root / "sessions")
                self._states.pop(session_id, None)
                self._index.deleted(session_id)

    def _truncate(self, session_id: str, seq: int, expected_head: int | None) -> Truncation:
        with self._locked(session_id) as fd:
            if fd is None:
                raise SessionNotFound(session_id)
            state, _ = self._sync(session_id, fd)
            head = state.summary.head
            if expected_head is not None and expected_head != head:
                raise CheckpointConflictError(session_id, expected_head, head)
            if not isinstance(seq, int) or not 0 <= seq <= head:
                raise CheckpointNotFound(
                    f"cannot truncate session {session_id!r} to seq {seq!r}: "
                    f"it must be between 0 and the head, {head}"
                )
            cut = state.offsets[seq] if seq < head else state.size
            everything = self._read_events(fd, session_id, 0, state.size)
            kept, removed = everything[:seq], everything[seq:]
            stash = file_stash.read_stash(self._stash_path(session_id))
            truncation = Truncation(len(stash) + 1, seq, time.time(), removed)
            with self._index.writing():
                self._index.pending(session_id)
                # The removed events are durable in the stash before they leave the log.
                file_stash.add_to_stash(self._stash_path(session_id), truncation)
                if seq and not framing.commits(
                    os.pread(fd, framing.FLAG_END, state.offsets[seq - 1])
                ):
                    self._cut_inside_append(session_id, fd, state.offsets[seq - 1], cut)
                    self._states.pop(session_id, None)
                else:
                    os.ftruncate(fd, cut)
                    os.fsync(fd)
                    state.allocated = cut
                    del state.offsets[seq:]
                    state.size = cut
                    state.summary = summarize(kept)
                    state.remember_last_line(fd)
                self._index.record(session_id, summarize(kept))
            return truncation

    def _cut_inside_append(self, session_id: str, fd: int, last: int, cut: int) -> None:
        """Keep the log up to ``cut``, which falls inside an append.

        The kept part's last line is re-framed to commit it. That changes a line
        in place, so the log is rewritten to a new file and renamed over: a crash
        leaves the old log or the new one, never a mix.
        """
        log = Path(self._log_path(session_id))
        data = os.pread(fd, last, 0) + framing.as_last_of_batch(os.pread(fd, cut - last, last))
        write_atomically(log, data, mode=0o600)

    def _truncations(self, session_id: str) -> list[Truncation]:
        with self._locked(session_id) as fd:
            return [] if fd is None else file_stash.read_stash(self._stash_path(session_id))

    def _read_events(self, fd: int, session_id: str, start: int, end: int) -> list[ev.Event]:
        where = self._log_path(session_id)
        data = os.pread(fd, end - start, start)
        return framing.scan(data, partial(_decode_event, where), where).records

    # -- the index

    def _list(self) -> list[SessionInfo]:
        if not (self.root / "sessions").is_dir():
            return []
        loaded = self._index.load()
        if loaded is None:
            self._index.rebuild(self._records_from_logs)
            loaded = self._index.load() or ({}, set(), 0)
        sessions, pending, lines = loaded
        for session_id in pending:
            # A writer announced a change and has not recorded it: it is running
            # now (the lock waits for it) or died (the log is the truth).
            with self._locked(session_id) as fd:
                if fd is None:
                    sessions.pop(session_id, None)
                    with self._index.writing():
                        self._index.deleted(session_id)
                    continue
                state, _ = self._sync(session_id, fd)
                sessions[session_id] = state.summary.info(session_id)
                with self._index.writing():
                    self._index.record(session_id, state.summary)
        if lines > compact_threshold(len(sessions)):
            self._index.compact()
        return sorted(sessions.values(), key=_newest_first)

    def _records_from_logs(self) -> bytes:
        # Lock-free and read-only: a torn tail here may be a write in progress, so it
        # is skipped, not cut. Writes racing the rebuild are re-checked by the index.
        lines = []
        for entry in os.scandir(self.root / "sessions"):
            if not entry.name.endswith(".jsonl"):
                continue
            try:
                data = Path(entry.path).read_bytes().rstrip(b"\0")  # see log_file
            except FileNotFoundError:
                continue
            found = framing.scan(data, partial(_decode_event, entry.path), entry.path)
            if found.records:
                info = summarize(found.records).info(entry.name[: -len(".jsonl")])
                lines.append(file_index.info_line(info))
        return b"".join(lines)


def _newest_first(info: SessionInfo) -> float:
    return -info.updated_at


def _decode_event(where: str, objects: list[dict[str, Any]]) -> list[ev.Event]:
    try:
        return ev.from_dicts(objects)
    except Exception as exc:  # a checksummed record that still fails to decode
        raise CorruptLogError(f"{where}: an event could not be read: {exc}") from exc


async def _run(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(fn, *args)
