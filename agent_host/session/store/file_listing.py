"""The file store's listing: ``list()`` and ``list_page`` from the session index
(file_index), repaired on the way from the logs it caches.

``list()`` folds the whole index; a page is read from this process's
:class:`~.file_index_view.IndexView` (the tail, and the sorted region from its end).
A page that finds a write not recorded reads that session's log and records it,
one that finds the index loose compacts it, and one that finds it missing or
damaged falls back to ``list()``, which rebuilds it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CorruptLogError, StoreUnavailable
from . import file_ids, file_index, framing
from .base import ListCursor, SessionInfo
from .file_index_view import IndexView
from .log_file import decode_event
from .summary import Summary, summarize

if TYPE_CHECKING:
    from .file import FileCheckpointer

log = logging.getLogger(__name__)

COMPACTION_RETRY = 60.0
"""Seconds before a page tries again a compaction that failed (a read-only store)."""
REPAIR_ROUNDS = 3
"""Pages that find writes not recorded, repaired in turn, before one falls back to
list(): a store written to that fast is read whole once."""


class FileListing:
    def __init__(self, store: FileCheckpointer) -> None:
        self._store = store
        self.view = IndexView(store._index.path)
        self._compaction_failed = -COMPACTION_RETRY
        """When a page last failed to compact the index (time.monotonic())."""

    def page(self, limit: int, after: ListCursor | None) -> list[SessionInfo]:
        if not os.path.isdir(self._store._sessions_dir):
            return []
        compacted = False
        for _ in range(REPAIR_ROUNDS):
            found = self.view.page(limit, after)
            if found is None:
                break  # missing or damaged: list() rebuilds it
            if found.pending:
                if not all([self._read_log(session_id)[1] for session_id in found.pending]):
                    break  # a store this process cannot write: list() reads the logs
                continue
            retry_at = self._compaction_failed + COMPACTION_RETRY
            if found.loose and not compacted and time.monotonic() >= retry_at:
                compacted = True
                with self.repairing("compact the index"):
                    self._store._index.compact()
                    continue  # the page again, from the compacted index
                # Not compacted (a store this process cannot write): still right, and
                # not tried again by every page, each a read of the whole index.
                self._compaction_failed = time.monotonic()
            return found.rows
        rows = self.list()  # repairs the index, for the view's next page
        if after is not None:
            rows = [r for r in rows if (r.updated_at, r.id) < tuple(after)]
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        return rows[:limit]

    def list(self) -> list[SessionInfo]:
        if not (self._store.root / "sessions").is_dir():
            return []
        loaded = self._store._index.load()
        if loaded is None:
            with self.repairing("rebuild the index"):
                self._store._index.rebuild(self.records_from_logs)
                loaded = self._store._index.load()
            if loaded is None:  # a store this process cannot write: fold the logs here
                loaded = file_index.parse(self.records_from_logs())
                loaded = loaded or file_index.Loaded({}, set(), False)
        sessions = loaded.sessions
        for session_id in loaded.pending:
            info, _ = self._read_log(session_id)
            if info is None:
                sessions.pop(session_id, None)
            else:
                sessions[session_id] = info
        if loaded.loose:
            with self.repairing("compact the index"):
                self._store._index.compact()
        return sorted(sessions.values(), key=_newest_first)

    def _read_log(self, session_id: str) -> tuple[SessionInfo | None, bool]:
        """``session_id`` as its log has it (None: no such session), and whether the
        index took its record. A writer announced a change and has not recorded it:
        it is running now (the lock waits for it), died, or could not write the index
        (a full disk). The log is the truth."""
        recorded = False
        with self._store._reading(session_id) as (fd, repair):
            if fd is None:
                info, what = None, f"record {session_id!r} deleted"
            else:
                state, _ = self._store._sync(session_id, fd, repair=repair)
                # A new session's first append that died before its write (a fork,
                # say): nothing was appended, so there is no session.
                info = state.summary.info(session_id) if state.summary.head else None
                what = f"record {session_id!r}" if info else f"record {session_id!r} never made"
            with self.repairing(what):
                with self._store._index.writing():
                    if info is None:
                        self._store._index.deleted(session_id)
                    else:
                        self._store._index.record(session_id, state.summary)
                recorded = True
        return info, recorded

    def record(self, session_id: str, summary: Summary | None) -> None:
        """Record a change that has happened (None: a delete) in the index.

        A line that cannot be written does not fail the call, which has changed
        the log already: the ``?`` written before the change stays the index's
        last word on the session, so ``list()`` reads its log instead.
        """
        try:
            if summary is None:
                self._store._index.deleted(session_id)
            else:
                self._store._index.record(session_id, summary)
        except OSError as exc:
            log.warning(
                "%s: session %r changed but the index could not record it (%s); "
                "list() will read its log",
                self._store._index.path,
                session_id,
                exc.strerror or exc,
            )

    @contextmanager
    def repairing(self, what: str) -> Iterator[None]:
        # The listing repairs the index on its way; a store it cannot write
        # (read-only, full) keeps the index as it is, and list() answers from the logs.
        try:
            yield
        except (OSError, StoreUnavailable) as exc:
            log.warning("%s: could not %s: %s", self._store._index.path, what, exc)

    def records_from_logs(self) -> bytes:
        # Lock-free and read-only: a torn tail here may be a write in progress, so it
        # is skipped, not cut. Writes racing the rebuild are re-checked by the index.
        lines = []
        for entry in os.scandir(self._store.root / "sessions"):
            if not entry.name.endswith(".jsonl"):
                continue
            try:
                data = Path(entry.path).read_bytes().rstrip(b"\0")  # see log_file
            except FileNotFoundError:
                continue
            try:
                found = framing.scan(data, partial(decode_event, entry.path), entry.path)
            except CorruptLogError as exc:
                # One damaged log must not hide every other session from list();
                # reading that session still raises, naming the file.
                log.warning("the index leaves out a damaged log: %s", exc)
                continue
            session_id = file_ids.id_of(self._store._sessions_dir, entry.name[: -len(".jsonl")])
            if found.records and session_id is not None:
                info = summarize(found.records).info(session_id)
                lines.append(file_index.info_line(info))
        return b"".join(lines)


def _newest_first(info: SessionInfo) -> float:
    return -info.updated_at
