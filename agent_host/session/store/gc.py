"""Collecting the blobs no event refers to, in proportion to what changed since the
last collection, not to every event ever logged.

Each collection leaves, per session, the blobs its events and truncations refer to
as of its head (the head's seq and time, the session's updated_at and its
truncations' mark with them) in a cache beside the store (the store's
``gc_cache``). The next collection reads a session's truncations only when their
mark changed (a store's ``truncation_marks``: the stash's size, the last
truncation's id; every time on a store without marks), and takes its record as it
is when the session's head and updated_at are unchanged (no log is read), or reads
only the events after the recorded head when the event there is still the one
recorded (the log only grew). Anything else -- a log cut behind the record, a
session deleted and made again, a damaged or missing cache -- reads that session's
whole log, as a collection without a cache does. A session with a capture a crash
left unfinished is never recorded: what that capture pins is read from the log
each time.

The cache is not synced: a record lost or torn is read again from the log. Two
collections at once each write the whole cache; either one's is right.

The events read (and only those: a session taken from the cache adds none) also
give each FileSnapshot's ``(before, after)`` pair, handed to a store that packs
versions as deltas (see blob_delta). A pair is needed once: its ``after`` stays a
delta from then on. Version 5 of the cache came with deltas, so that the first
collection after them reads every log once and packs an old store whole.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from ..blobs import GcResult, is_blob_id
from ..events import Event, FileSnapshot, UnknownEvent
from .base import Checkpointer, SessionInfo

log = logging.getLogger(__name__)
_VERSION = 5

Record = tuple[int, float, float, int, list[str]]
"""head seq, the head event's ts, the session's updated_at, its truncations' mark
(the store's truncation_marks, else the last truncation's id), the blobs referred to."""


async def collect_garbage(store: Checkpointer, grace_seconds: float = 3600.0) -> GcResult:
    """Remove blobs that no event of any session (truncated ones included) refers to.

    Blobs stored within ``grace_seconds`` are kept whatever happens: a snapshot is
    stored just before the event that refers to it is appended. So are blobs a live
    holder pinned (see blob_pins): a workspace index's, in this process or another.
    """
    cache_path: Path | None = getattr(store, "gc_cache", None)
    cache = _load(cache_path) if cache_path is not None else _Cache([], {})
    referenced: set[str] = set()
    pairs: list[tuple[str, str]] = []
    infos = await store.list()
    marks_of = getattr(store, "truncation_marks", None)
    marks = await marks_of([i.id for i in infos]) if marks_of and cache.sessions else {}
    kept: dict[str, list] = {}
    changed = len(infos) != len(cache.sessions)
    for info in infos:
        entry = cache.sessions.get(info.id)
        mark = marks.get(info.id)
        if entry is not None and mark is not None and entry[3] == mark:
            if (info.head, info.updated_at) == (entry[0], entry[2]):
                # Unchanged since the last collection: its record as it was, its
                # blobs by position, with no per-blob work (see _Cache); its pairs
                # were packed by the collection that saved the record.
                kept[info.id] = entry
                continue
        changed = True
        record = None if entry is None else cache.record(entry)
        blobs, record = await _session_blobs(store, info, record, mark, pairs)
        referenced |= blobs
        if record is not None:
            kept[info.id] = cache.entry(record)
    referenced |= cache.blobs_of(kept.values())
    pack = getattr(store.blobs, "gc_and_pack", None)
    if pack is not None:
        # Forks repeat their parent's pairs: each once.
        result: GcResult = await pack(referenced, grace_seconds, list(dict.fromkeys(pairs)))
    else:
        result = await store.blobs.gc(referenced, grace_seconds)
    # Only once the pairs are packed: a record stands for events never read again.
    if cache_path is not None and (changed or cache.sessions.keys() != kept.keys()):
        _save(cache_path, cache, kept)
    return result


async def _session_blobs(
    store: Checkpointer,
    info: SessionInfo,
    record: Record | None,
    mark: int | None,
    pairs: list[tuple[str, str]],
) -> tuple[set[str], Record | None]:
    """The blobs ``info``'s session refers to, and its record for the next collection
    (None: do not record it). ``mark``: the store's truncation mark of the session
    (see truncation_marks), None if it has none. The before/after pairs of the
    snapshot events read are added to ``pairs``."""
    from ..capture_log import pinned_blobs

    unchanged = record is not None and mark is not None and record[3] == mark
    truncations = [] if unchanged else await store.truncations(info.id)
    cuts = mark if mark is not None else max((t.id for t in truncations), default=0)
    if record is not None:
        head, head_ts, updated_at, _, known = record
        found = set(known)
        # A cut after the recorded head, grown back to it, leaves head and time as
        # they were: its truncation is what says so.
        for truncation in truncations:  # new ones, or all when marks are unknown
            found |= _referenced(truncation.events, pairs)
        if (info.head, info.updated_at) == (head, updated_at):
            return found, (head, head_ts, updated_at, cuts, sorted(found))
        newer = await store.read(info.id, since_seq=head - 1) if head > 0 else None
        if newer and newer[0].seq == head and newer[0].ts == head_ts:
            found |= _referenced(newer[1:], pairs)  # the log only grew since
            # No capture was pending at the recorded head: one now began after it.
            pinned = await pinned_blobs(newer[1:], store.blobs)
            last = newer[-1]
            new_record = (last.seq, last.ts, info.updated_at, cuts, sorted(found))
            return found | pinned, None if pinned else new_record
    events = await store.read(info.id)
    pinned = await pinned_blobs(events, store.blobs)  # a crash's unfinished capture
    found = _referenced(events, pairs)
    if unchanged:  # not read above; the log is read whole, so are they
        truncations = await store.truncations(info.id)
    for truncation in truncations:
        found |= _referenced(truncation.events, pairs)
    if pinned or not events:
        return found | pinned, None
    last = events[-1]
    return found, (last.seq, last.ts, info.updated_at, cuts, sorted(found))


def _referenced(events: list[Event], pairs: list[tuple[str, str]] | None = None) -> set[str]:
    found: set[str] = set()
    for event in events:
        if isinstance(event, FileSnapshot):
            found.update(b for b in (event.before, event.after, event.buffer_before) if b)
            # A jump's after is an older version, packed (or not) when it was new.
            if pairs is not None and event.before and event.after and not event.jump:
                pairs.append((event.before, event.after))
        elif isinstance(event, UnknownEvent):
            # A newer version's event may refer to blobs under any field name.
            found.update(_blob_ids_in(event.data))
    return found


def _blob_ids_in(value: object) -> list[str]:
    if is_blob_id(value):
        return [value]  # type: ignore[list-item]
    if isinstance(value, dict):
        return [b for v in value.values() for b in _blob_ids_in(v)]
    if isinstance(value, list):
        return [b for v in value for b in _blob_ids_in(v)]
    return []


class _Cache:
    """What the last collection recorded: a table of blob ids, and per session its
    record with its blobs as positions in the table (the file's own form, so that
    an unchanged session costs no work per blob to load, check or save again)."""

    def __init__(self, blobs: list[str], sessions: dict[str, list]) -> None:
        self.table = blobs
        self.sessions = sessions
        """id -> [head, head_ts, updated_at, mark, [positions in table]]"""
        self._at: dict[str, int] | None = None

    def record(self, entry: list) -> Record:
        head, head_ts, updated_at, mark, refs = entry
        return (head, head_ts, updated_at, mark, [self.table[i] for i in refs])

    def entry(self, record: Record) -> list:
        if self._at is None:
            self._at = {b: i for i, b in enumerate(self.table)}
        at, table = self._at, self.table
        refs = []
        for blob in record[4]:
            i = at.get(blob)
            if i is None:
                i = at[blob] = len(table)
                table.append(blob)
            refs.append(i)
        return [*record[:4], refs]

    def blobs_of(self, entries: Iterable[list]) -> set[str]:
        used: set[int] = set()
        for entry in entries:
            used.update(entry[4])
        return {self.table[i] for i in used}


_loaded: dict[Path, tuple[tuple[int, int, int], list[str], dict[str, list]]] = {}
"""The cache as this process last read or wrote it, by path, with the file's (inode,
mtime, size) then: a server collecting every so often reads and checks it again
only when another process wrote it (~75 ms of a 10,000-session gc's ~125 ms)."""


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _load(path: Path) -> _Cache:
    try:
        stamp = _stamp(path)
        known = _loaded.get(path)
        if known is not None and known[0] == stamp:
            # Copies: a collection appends to the table (sessions' entries it
            # only replaces).
            return _Cache(list(known[1]), dict(known[2]))
        cache = _read(path)
        if cache.sessions:
            _loaded[path] = (stamp, list(cache.table), dict(cache.sessions))
        return cache
    except FileNotFoundError:
        return _Cache([], {})
    except OSError as exc:
        log.warning("%s: the gc cache is not used (%s); every log is read", path, exc)
        return _Cache([], {})


def _read(path: Path) -> _Cache:
    try:
        data = orjson.loads(path.read_bytes())
        if data.get("version") != _VERSION:
            return _Cache([], {})
        blobs: list[str] = data["blobs"]
        sessions: dict[str, list] = data["sessions"]
        size = len(blobs)
        for entry in sessions.values():
            head, head_ts, updated_at, mark, refs = entry
            if not (
                type(head) is int
                and isinstance(head_ts, float | int)
                and isinstance(updated_at, float | int)
                and type(mark) is int
                and type(refs) is list
            ):
                raise ValueError("a session's record is of the wrong shape")
            if refs and not (0 <= min(refs) and max(refs) < size):
                raise IndexError("a blob position past the table")
        if not all(isinstance(b, str) for b in blobs):
            raise ValueError("a blob id that is not a string")
        return _Cache(blobs, sessions)
    except FileNotFoundError:
        return _Cache([], {})
    except (
        OSError,
        orjson.JSONDecodeError,
        AttributeError,
        KeyError,
        TypeError,
        ValueError,
        IndexError,
    ) as exc:
        log.warning("%s: the gc cache is not used (%s); every log is read", path, exc)
        return _Cache([], {})


def _save(path: Path, cache: _Cache, sessions: dict[str, list]) -> None:
    # Each blob once, sessions naming theirs by position: a blob many sessions
    # share (forks) costs its 64 characters once. Positions no session uses any
    # more are dropped once they are most of the table.
    used = set()
    for entry in sessions.values():
        used.update(entry[4])
    table = cache.table
    if len(used) * 2 < len(table):
        moved = {old: new for new, old in enumerate(sorted(used))}
        table = [table[i] for i in sorted(used)]
        sessions = {
            sid: [*entry[:4], [moved[i] for i in entry[4]]] for sid, entry in sessions.items()
        }
    data = orjson.dumps({"version": _VERSION, "blobs": table, "sessions": sessions})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            st = os.fstat(fd)  # of what we wrote: if another replaces it, no match
        finally:
            os.close(fd)
        os.replace(tmp, path)
        _loaded[path] = ((st.st_ino, st.st_mtime_ns, st.st_size), list(table), dict(sessions))
    except OSError as exc:  # a cache: the next collection reads the logs instead
        log.warning("%s: the gc cache was not written: %s", path, exc)
        tmp.unlink(missing_ok=True)
