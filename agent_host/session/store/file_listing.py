"""The file store's listing: ``list()`` and ``list_page`` from the session index
(file_index), repaired on the way from the logs it caches.

``list()`` folds the whole index; a page is read from this process's
:class:`~.file_index.IndexView`, which reads only the lines written since its last
look, and falls back to ``list()`` (which repairs what the view cannot vouch for: a
write not recorded, a damaged or loose index) only then.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CorruptLogError, StoreUnavailable
from . import file_ids, file_index, framing
from .base import ListCursor, SessionInfo
from .file_index import IndexView, compact_threshold
from .log_file import decode_event
from .summary import Summary, summarize

if TYPE_CHECKING:
    from .file import FileCheckpointer

log = logging.getLogger(__name__)


class FileListing:
    def __init__(self, store: FileCheckpointer) -> None:
        self._store = store
        self.view = IndexView(store._index.path)

    def page(self, limit: int, after: ListCursor | None) -> list[SessionInfo]:
        if not os.path.isdir(self._store._sessions_dir):
            return []
        found = self.view.page(limit, after)
        if found is not None:
            return found
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
                loaded = file_index.parse(self.records_from_logs()) or ({}, set(), 0)
        sessions, pending, lines = loaded
        for session_id in pending:
            # A writer announced a change and has not recorded it: it is running
            # now (the lock waits for it), died, or could not write the index (a
            # full disk). The log is the truth.
            with self._store._reading(session_id) as (fd, repair):
                if fd is None:
                    sessions.pop(session_id, None)
                    with self.repairing(f"record {session_id!r} deleted"):
                        with self._store._index.writing():
                            self._store._index.deleted(session_id)
                    continue
                state, _ = self._store._sync(session_id, fd, repair=repair)
                if state.summary.head == 0:
                    # A new session's first append that died before its write (a
                    # fork, say): nothing was appended, so there is no session.
                    sessions.pop(session_id, None)
                    with self.repairing(f"record {session_id!r} never made"):
                        with self._store._index.writing():
                            self._store._index.deleted(session_id)
                    continue
                sessions[session_id] = state.summary.info(session_id)
                with self.repairing(f"record {session_id!r}"):
                    with self._store._index.writing():
                        self._store._index.record(session_id, state.summary)
        if lines > compact_threshold(len(sessions)):
            with self.repairing("compact the index"):
                self._store._index.compact()
        return sorted(sessions.values(), key=_newest_first)

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
        # list() repairs the index on its way; a store it cannot write (read-only,
        # full) keeps the index as it is, and list() answers from the logs.
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
