"""The default store: one checksummed JSON Lines log per session.

Layout under the store's root (folders 0700, files 0600)::

    sessions/<name>.jsonl    the log, one framed event per line
    sessions/<name>.id       the exact session id, for a derived <name> only
    truncated/<name>.jsonl   what truncate() removed, one framed Truncation per line
    locks/<name>.lock        the per-session lock (filelock); <name>.turn its turn lease
    torn/                    bytes cut from a torn tail, kept for inspection
    snapshots/<name>.snap    the resume snapshot, a cache (see file_snapshot)
    index.jsonl              the session index (see file_index)
    blobs/                   file snapshots (see blobs)
    pins/<holder>.pins       blobs a live workspace index holds, kept from gc (blob_pins)

``<name>`` is derived from the session id, never taken from it (ids.file_stem): a
plain id (letters, digits, '-', '_', at most 128) is its own name, as in every
store written before other ids were allowed; any other id gets ``~<slug>~<hash>``.

Every operation on a session holds its lock, so readers see whole appends and
writers in several processes take turns. ``append`` returns after fdatasync. A
process keeps, per session, the byte size and event offsets it last saw; under the
lock it re-reads only bytes another process added since, so an append costs one
write and one fdatasync however long the log.

What the operating system refuses (a full disk, a read-only folder, an I/O error)
reaches the caller as :class:`StoreUnavailable` naming the file and the reason, and
a write that raises it has changed nothing: what it wrote is taken back first. A
failure after the change is made and durable (an index line that does not fit)
does not fail the call; it is logged and repaired later. A store this process
cannot write can still be read: readers then hold the lock through a read-only
file, or go without it, and repair nothing.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from .. import events as ev
from ..blobs import FileBlobStore
from ..durable import fsync_dir, write_atomically
from ..errors import (
    SessionNotFound,
    store_unavailable,
)
from . import file_ids, file_snapshot, file_stash, framing, locking, log_file
from .base import ListCursor, SessionInfo, StoreBase, Truncation
from .file_index import SessionIndex
from .file_listing import FileListing
from .file_sync import TAIL, LogSync, restores
from .ids import file_stem
from .leases import file_lease
from .log_file import LogState, decode_event
from .pacing import INLINE_WRITE_LIMIT, SyncPacer, WouldBlock
from .summary import Summary, summarize

T = TypeVar("T")
P = ParamSpec("P")
Method = Callable[Concatenate["FileCheckpointer", P], T]
log = logging.getLogger(__name__)


def _reported(action: str) -> Callable[[Method[P, T]], Method[P, T]]:
    """Make an OSError escaping a store method a StoreUnavailable naming the file the
    OS named, else the session's log (a session method's first argument is its id),
    else the store. What this process knew of that log may no longer hold: it goes."""

    def decorate(method: Method[P, T]) -> Method[P, T]:
        @functools.wraps(method)
        def reported(self: FileCheckpointer, *args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return method(self, *args, **kwargs)
            except OSError as exc:
                session_id = args[0] if args else None
                if isinstance(session_id, str):
                    self._states.pop(session_id, None)
                    where = exc.filename or self._log_path(session_id)
                else:
                    where = exc.filename or self.root
                raise store_unavailable(where, action, exc) from exc

        return reported

    return decorate


class FileCheckpointer(LogSync, StoreBase):
    """Session logs as files under ``root``; several processes may share it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().absolute()
        # Plain strings: pathlib costs more per append than the lock does.
        self._sessions_dir = os.path.join(self.root, "sessions")
        self._locks_dir = os.path.join(self.root, "locks")
        self._made_dirs = False
        self.blobs = FileBlobStore(self.root / "blobs", self.root / "pins")
        self._index = SessionIndex(self.root)
        self._listing = FileListing(self)
        self._states: dict[str, LogState] = {}
        self._pacer = SyncPacer()

    def __repr__(self) -> str:
        return f"FileCheckpointer({str(self.root)!r})"

    @property
    def where(self) -> str:
        return str(self.root)

    @property
    def url(self) -> str:
        return self.root.as_uri()

    @property
    def gc_cache(self) -> Path:
        """Where collect_garbage keeps what each session referred to (see gc)."""
        return self.root / "gc-refs.json"

    async def truncation_marks(self, session_ids: list[str]) -> dict[str, int]:
        """Per session, a number that changes when a truncation is added (its
        stash's size), for gc to read only the truncations that changed."""

        def marks() -> dict[str, int]:
            # One listing of the stashes, not a stat of each session's: most
            # sessions were never truncated.
            sizes: dict[str, int] = {}
            try:
                with os.scandir(self.root / "truncated") as entries:
                    for entry in entries:
                        if entry.name.endswith(".jsonl"):
                            with suppress(FileNotFoundError):
                                sizes[entry.name[: -len(".jsonl")]] = entry.stat().st_size
            except FileNotFoundError:
                pass
            return {sid: sizes.get(file_stem(sid), 0) for sid in session_ids}

        return await asyncio.to_thread(marks)

    # -- the primitives (see StoreBase): each runs on a worker thread, holding the
    # session lock, except a short append while the disk is fast (see pacing).

    def _append_inline(
        self, session_id: str, events: list[ev.Event], expected_head: int | None
    ) -> int | None:
        if self._pacer.inline() and session_id in self._states:
            try:
                return self._append(session_id, events, expected_head, wait=False)
            except WouldBlock:
                pass  # nothing was written: the thread does the whole append
        return None

    def _lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        self._make_dirs()
        return file_lease(f"{self._locks_dir}/{file_stem(session_id)}.turn", session_id)

    def _close(self) -> None:
        self._states.clear()
        self._index.close()
        self._listing.view.close()

    # -- paths and locks

    def _log_path(self, session_id: str) -> str:
        return f"{self._sessions_dir}/{file_stem(session_id)}.jsonl"

    def _stash_path(self, session_id: str) -> Path:
        return self.root / "truncated" / f"{file_stem(session_id)}.jsonl"

    def _absent(self, session_id: str) -> bool:
        # A session that does not exist is read, or not changed, without creating
        # anything, not even a lock. (Not checked for a log this process has seen:
        # a stat of it would slow its next sync; see LogState.still_matches.)
        if session_id in self._states or os.path.exists(self._log_path(session_id)):
            return False
        self._states.pop(session_id, None)
        return True

    @contextmanager
    def _locked(
        self, session_id: str, create: bool = False, wait: bool = True
    ) -> Iterator[int | None]:
        """Hold the session's lock to change it; yield its log opened read-write
        (None if absent). A store that cannot be written raises StoreUnavailable."""
        if not create and self._absent(session_id):
            yield None
            return
        self._make_dirs()
        with locking.hold(f"{self._locks_dir}/{file_stem(session_id)}.lock", wait=wait):
            # Not O_APPEND: appends write over the zeros past the content (log_file).
            flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
            if create:
                file_ids.keep(self._sessions_dir, session_id)
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

    @contextmanager
    def _reading(self, session_id: str) -> Iterator[tuple[int | None, bool]]:
        """Hold the session's lock to read it, if this process can: yield its log
        (None if absent) and whether a torn tail may be cut.

        Only a writer holding the lock may cut one: without the lock a torn tail may
        be a write in progress, so the log is then opened read-only and the tail
        read as not there, as it is when the log cannot be written.
        """
        if self._absent(session_id):
            yield None, False
            return
        path = self._log_path(session_id)
        with locking.hold(f"{self._locks_dir}/{file_stem(session_id)}.lock", reader=True) as locked:
            fd, writable = None, False
            try:
                if locked:
                    try:
                        fd, writable = os.open(path, os.O_RDWR | os.O_CLOEXEC), True
                    except OSError as exc:
                        if exc.errno not in locking.CANNOT_WRITE or exc.errno == errno.ENOENT:
                            raise
                if fd is None:
                    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                self._states.pop(session_id, None)
                yield None, False
                return
            try:
                yield fd, writable
            finally:
                os.close(fd)

    def _make_dirs(self) -> None:
        # Created on first write, so reading a mistyped store path leaves no trace.
        if not self._made_dirs:
            for sub in ("", "sessions", "truncated", "locks"):
                folder = self.root / sub
                try:
                    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                except OSError as exc:
                    raise store_unavailable(exc.filename or folder, "create", exc) from exc
            self._made_dirs = True

    # -- the log (its view in this process: see file_sync)

    @_reported("append to")
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
                self.check_head(session_id, expected_head, 0)
                return 0  # nothing to write to a session that does not exist
            state, _ = self._sync(session_id, fd, wait, back_to=TAIL)
            if state.summary.prompts is None and any(map(restores, events)):
                if not wait:
                    raise WouldBlock(session_id)
                state, _ = self._sync_whole(session_id, fd, repair=True)
            head = state.summary.head
            self.check_head(session_id, expected_head, head)
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
                if state.size == 0:
                    # Before the write, so that an append that raises left nothing.
                    fsync_dir(self._sessions_dir)
                started = time.perf_counter()
                # A failed write is taken back, then raised (see _reported).
                state.allocated = log_file.write_at(fd, data, state.size, state.allocated)
                self._pacer.observe(time.perf_counter() - started)
                # From here the events are durable: the append has happened.
                for line in lines:
                    state.offsets.append(state.size)
                    state.size += len(line)
                state.summary.add_new(events, head + 1, ts)
                state.mark = lines[-1][: log_file.MARK]
                self._record(session_id, state.summary)
            return state.summary.head

    @_reported("read")
    def _read(self, session_id: str, since_seq: int) -> list[ev.Event]:
        since = max(since_seq, 0)
        with self._reading(session_id) as (fd, repair):
            if fd is None:
                return []
            state, new = self._sync(
                session_id, fd, repair=repair, back_to=since + 1 if since else None
            )
            return self._since(session_id, fd, state, new, since, repair)

    @_reported("write a snapshot")
    def _write_snapshot(self, session_id: str, head: int, data: bytes) -> None:
        if self._absent(session_id):
            return
        folder = os.path.join(self.root, "snapshots")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        file_snapshot.write(self._snapshot_path(session_id), head, data)

    @_reported("write a snapshot")
    def _append_snapshot(self, session_id: str, data: bytes) -> tuple[int, int, int] | None:
        if self._absent(session_id):
            return None
        return file_snapshot.append(self._snapshot_path(session_id), data)

    @_reported("read")
    def _read_snapshot(
        self, session_id: str, limit: int | None
    ) -> tuple[bytes, list[ev.Event]] | None:
        with self._reading(session_id) as (fd, repair):
            if fd is None:
                return None
            found = file_snapshot.read(self._snapshot_path(session_id), limit)
            if found is None:
                return None
            head, data = found
            state, new = self._sync(session_id, fd, repair=repair, back_to=head)
            return data, self._since(session_id, fd, state, new, max(head - 1, 0), repair)

    def _snapshot_path(self, session_id: str) -> str:
        return os.path.join(self.root, "snapshots", f"{file_stem(session_id)}.snap")

    @_reported("read")
    def _head(self, session_id: str) -> int:
        with self._reading(session_id) as (fd, repair):
            if fd is None:
                return 0
            return self._sync(session_id, fd, repair=repair, back_to=TAIL)[0].summary.head

    @_reported("delete")
    def _delete(self, session_id: str) -> None:
        with self._locked(session_id) as fd:
            if fd is None:
                raise SessionNotFound(session_id)
            with self._index.writing():
                self._index.pending(session_id)
                os.unlink(self._log_path(session_id))
                # The session is gone for every reader: what follows cannot undo
                # that, so a failure in it is logged, not raised.
                self._states.pop(session_id, None)
                try:
                    self._stash_path(session_id).unlink(missing_ok=True)
                    file_ids.forget(self._sessions_dir, session_id)
                    Path(self._snapshot_path(session_id)).unlink(missing_ok=True)
                    fsync_dir(self._sessions_dir)
                except OSError as exc:
                    log.warning("deleting session %r: %s", session_id, exc)
                self._record(session_id, None)

    @_reported("truncate")
    def _truncate(self, session_id: str, seq: int, expected_head: int | None) -> Truncation:
        with self._locked(session_id) as fd:
            if fd is None:
                raise SessionNotFound(session_id)
            state, _ = self._sync(session_id, fd)
            if state.first:
                state, _ = self._sync_whole(session_id, fd, repair=True)
            head = state.summary.head
            self.check_cut(session_id, seq, head, expected_head)
            cut = state.offsets[seq] if seq < head else state.size
            where = self._log_path(session_id)
            content = os.pread(fd, state.size, 0)
            everything = framing.scan(content, partial(decode_event, where), where).records
            kept, removed = everything[:seq], everything[seq:]
            stash_path = self._stash_path(session_id)
            stash = file_stash.read_stash(stash_path)
            # Not len + 1: a bad record moved aside would make that repeat an id.
            number = max((t.id for t in stash), default=0) + 1
            truncation = Truncation(number, seq, time.time(), removed)
            with self._index.writing():
                self._index.pending(session_id)
                stash_size = file_stash.stash_size(stash_path)
                try:
                    # The removed events are durable in the stash before they leave the log.
                    file_stash.add_to_stash(stash_path, truncation)
                    inside = seq and not framing.commits(
                        content[state.offsets[seq - 1] : state.offsets[seq - 1] + framing.FLAG_END]
                    )
                    if inside:
                        self._cut_inside_append(where, content, state.offsets[seq - 1], cut)
                    else:
                        log_file.cut_to(fd, content, cut)
                except OSError as exc:
                    # The log is as it was: the truncation did not happen, so its
                    # record must not stay in the stash for an undo to find.
                    file_stash.take_back(stash_path, stash_size)
                    self._states.pop(session_id, None)
                    raise store_unavailable(exc.filename or where, "truncate", exc) from exc
                if inside:
                    self._states.pop(session_id, None)
                else:
                    state.allocated = cut
                    del state.offsets[seq:]
                    state.size = cut
                    state.summary = summarize(kept)
                    state.remember_last_line(fd)
                self._record(session_id, summarize(kept))
            return truncation

    def _cut_inside_append(self, where: str, content: bytes, last: int, cut: int) -> None:
        """Keep the log up to ``cut``, which falls inside an append.

        The kept part's last line is re-framed to commit it. That changes a line
        in place, so the log is rewritten to a new file and renamed over: a crash
        leaves the old log or the new one, never a mix. A failure raises with the
        old log in place; the folder's sync after the rename is best effort, as
        the cut is then made and seen by every reader.
        """
        data = content[:last] + framing.as_last_of_batch(content[last:cut])
        write_atomically(Path(where), data, mode=0o600, dir_sync_best_effort=True)

    @_reported("read")
    def _truncations(self, session_id: str) -> list[Truncation]:
        with self._reading(session_id) as (fd, _):
            return [] if fd is None else file_stash.read_stash(self._stash_path(session_id))

    # -- the index (see file_listing)

    @_reported("read")
    def _list(self) -> list[SessionInfo]:
        return self._listing.list()

    @_reported("read")
    def _list_page(self, limit: int, after: ListCursor | None) -> list[SessionInfo]:
        return self._listing.page(limit, after)

    def _record(self, session_id: str, summary: Summary | None) -> None:
        self._listing.record(session_id, summary)
