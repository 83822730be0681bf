"""Capturing what a command changed in the workspace, as file snapshots.

A command can change any file, and says nothing of it. What it changed is found by
comparing the disk with an index the engine keeps: path -> lstat signature -> blob
of the content. The index learns every file's content before any command runs (the
first index, then :meth:`WorkspaceIndex.refresh` before each command), so the
content a file had before a command is already in the blob store when the command
changes it; :meth:`WorkspaceIndex.changes` after the command lstats every entry and
reads only the files whose stat moved.

The blobs the index holds are pinned (see blob_pins): most are of files no event
refers to, and a gc -- here or in another process -- must not take the content a
command is about to overwrite. Should the pins lapse, the index checks its blobs
before it trusts them again, and reads anew a file whose blob is gone.

A shadow git commit per checkpoint would find the same changes, but it compresses
and writes every file of the workspace the first time and walks it all each time;
here an unchanged file costs one lstat.

Planning a pass is capture_plan's; knowing which stored copy is current, capture_copy's.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from .blob_pins import new_holder
from .blobs import BlobStore, blob_id
from .capture_copy import SavedCopy
from .capture_diff import (
    CapturedChanges,
    Entry,
    IndexDiff,
    Plan,
    Read,
    deleted,
    report_read,
    smudged,
)
from .capture_plan import VERIFY_EVERY_S, Found, PassPlanner, unlisted_in
from .capture_read import batches, read_batch
from .capture_saved import SavedDelta, SavedIndex, decode, read_saved
from .capture_walk import Sig
from .capture_watch import INotifyFactory
from .errors import PathOutsideWorkspace, StoreUnavailable
from .limits import MAX_FILE_BYTES  # files past it: indexed by stat, in not_captured
from .tasks import run_task
from .workspace.paths import relative_in_roots

log = logging.getLogger(__name__)

# Folder names never walked, at any depth. Each is big, rebuilt by a tool, or both,
# and a restore should not rewind it: .git (git's own store, which commands like
# `git commit` change on purpose); node_modules (npm/yarn installs); .venv and venv
# (Python virtualenvs); __pycache__ (bytecode); .mypy_cache and .pytest_cache (tool
# caches); .tox (tox's environments); .gradle (Gradle's caches); target (Cargo and
# Maven output); dist and build (packaging and build output). A source folder that
# happens to have one of these names is not captured either: a change of its own
# entries shows as "build/" in not_captured.
DEFAULT_IGNORES: tuple[str, ...] = (
    ".git",
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".tox",
    ".gradle",
    "target",
    "dist",
    "build",
)

_INLINE_READS = 64
_INLINE_BYTES = 1024 * 1024
"""A batch of at most this many files and bytes is read on the event loop: less
than a thread's hand-off costs."""


_RACY_NS = 3_000_000_000
"""A file whose mtime is this close to the moment it was read may change again within
the same timestamp tick and keep its stat. Such a file's entry is kept with its stat
smudged (see capture_diff.smudged), so the next pass that looks at it reads it again:
a walk, or a watched pass an event names it to. This window is for whole-second
stamps (ext3 and HFS+ store seconds, FAT two); an mtime with a fraction of a second
comes from a filesystem whose stamps are finer (ext4, XFS, btrfs, tmpfs: ns, from a
clock that ticks every 1-10 ms), for which :data:`_RACY_FINE_NS` is the window."""
_RACY_FINE_NS = 100_000_000
"""Ten of the coarsest kernel clock ticks: a change after the read is stamped at least
the read's time less one tick, past an mtime this much older than the pass. So a
walking index reads a file a command changed again by the next pass or two, not by
every pass for 3 s."""


def _is_racy(mtime_ns: int, started_ns: int) -> bool:
    fine = mtime_ns % 1_000_000_000 != 0
    window = min(_RACY_NS, _RACY_FINE_NS) if fine else _RACY_NS
    return mtime_ns >= started_ns - window


def _found(
    results: list[tuple[Read, Sig | None, bytes | None]],
    same: list[bool],
    ids: Iterator[str],
    started_ns: int,
) -> list[Found]:
    """What a batch read, with the blobs ``ids`` of the contents stored (those not
    ``same`` as the blob the index holds), in order; a file read too close to the
    pass's start (``started_ns``) to trust its stat, with its stat smudged (see
    :func:`~.capture_diff.smudged`)."""
    found: list[Found] = []
    for (item, sig, data), kept in zip(results, same, strict=True):
        blob = None if data is None else item.old[1] if kept and item.old is not None else next(ids)
        if sig is not None and blob is not None and _is_racy(sig[1], started_ns):
            sig = smudged(sig)
        found.append((item, sig, blob))
    return found


def _racy(plan: Plan, found: list[Found], racy: set[str]) -> set[str]:
    """What is left, after a pass, of ``racy``: the files a saved copy named to
    read again whatever their stat (racy when it was stored, or changed by the
    engine). A walk reads them all; a watched pass, those an event names, so the
    rest stay in the set until a pass reads them."""
    if plan.looked is None or not racy:
        return set()
    read = {item.path for item, _, _ in found}
    seen = plan.seen
    return {p for p in racy if p not in seen and p not in read}


class WorkspaceIndex:
    """path -> (size, mtime_ns, inode, mode) -> blob, for the files under the roots.

    Passes (the first index, :meth:`refresh`, :meth:`changes`) run one at a time.
    Only files are captured; symlinks are not followed, and folders are implied by
    the files in them (an empty folder a command made or removed is not seen).
    """

    def __init__(
        self,
        roots: Sequence[Path],
        blobs: BlobStore,
        *,
        ignore: Sequence[str] = DEFAULT_IGNORES,
        max_file_bytes: int = MAX_FILE_BYTES,
        watch: bool = True,
        verify_every: float = VERIFY_EVERY_S,
        inotify: INotifyFactory | None = None,
    ) -> None:
        if not roots:
            raise ValueError("a workspace index needs at least one root folder")
        self._roots = [Path(os.path.realpath(r)) for r in roots]
        self._blobs = blobs
        self._max = max_file_bytes
        self._files: dict[str, Entry] = {}
        self._folders: dict[str, str] = {}
        self._racy: set[str] = set()
        self._stale: set[str] = set()
        self._lock = asyncio.Lock()
        self._first: asyncio.Task[CapturedChanges] | None = None
        self._indexed = False
        self._holder = new_holder()
        self._pinned = False
        self._lapsed = False
        self._copy = SavedCopy(self._roots)
        self._planner = PassPlanner(
            self._roots,
            ignore,
            max_file_bytes,
            watch=watch,
            verify_every=verify_every,
            inotify=inotify,
        )

    def start(self) -> None:
        """Begin the first index in a background task, if not begun already."""
        if self._first is None and not self._indexed:
            self._first = run_task(self._pass(report=False), name="the first workspace index")

    async def refresh(self) -> None:
        """Await the first index, then bring the index up to date with the disk: files
        changed since the last pass are read and stored, not reported (they are the
        user's, made between commands). Call it before each command."""
        await self._indexed_once()
        await self._pass(report=False)

    async def changes(self) -> CapturedChanges:
        """What changed since the last pass, the new contents stored (as durably as
        the old ones already are). Call it after the command. Files that cannot be
        read are listed in ``not_captured``; only the blob store's errors raise."""
        await self._indexed_once()
        return await self._pass(report=True)

    async def save(self) -> str:
        """Store the index as it is (call it after :meth:`refresh`): the blob a
        :class:`~.events.CaptureStarted` names, from which :meth:`load` rebuilds
        it in any process. Stored again only when a pass changed the index and did
        not store the copy itself: a pass that stores contents stores, in the same
        put, the delta it leaves (see capture_saved), so that a command's begin
        after an untouched gap stores nothing."""
        async with self._lock:  # no pass changes the index meanwhile
            stored = self._copy.blob
            blob = await self._copy.save(
                self._files, self._folders, self._racy, self._stale, self._blobs, self._holder
            )
            if stored is None:
                self._pinned = True
            return blob

    @classmethod
    async def load_saved(cls, blob: str, blobs: BlobStore) -> WorkspaceIndex:
        """The index :meth:`save` stored as ``blob``, ready for :meth:`changes`: what
        changed on disk since it was saved. BlobNotFound or BlobCorrupt if it (or
        the whole copy a delta names) cannot be read, ValueError if it is not one."""
        return cls._of(await read_saved(blob, blobs), blobs)

    @classmethod
    def load(cls, data: bytes, blobs: BlobStore) -> WorkspaceIndex:
        """The index of a whole copy :meth:`save` stored (ValueError if ``data`` is
        not one; a delta is read by :meth:`load_saved`)."""
        copy = decode(data)
        if isinstance(copy, SavedDelta):
            raise ValueError(f"a delta of the saved index {copy.base}, not a whole copy")
        return cls._of(copy, blobs)

    @classmethod
    def _of(cls, copy: SavedIndex, blobs: BlobStore) -> WorkspaceIndex:
        # Loaded to finish one capture: one walk, nothing to watch.
        index = cls(copy.roots, blobs, watch=False)
        index._files = copy.files
        index._folders = copy.folders
        index._planner.unlisted = unlisted_in(copy.folders)
        index._racy = copy.racy
        index._indexed = True
        return index

    def blob_ids(self) -> set[str]:
        """The content blobs the index names (what a pending capture needs kept)."""
        return {blob for _, blob in self._files.values() if blob is not None}

    def forget(self, path: str) -> None:
        """The engine's own tools changed ``path`` (a display path, or one relative to
        the first root): the next pass reads it again and takes its content as known,
        without reporting it. Call refresh() before the next command as usual."""
        try:
            shown = relative_in_roots(self._roots, Path(path))
        except PathOutsideWorkspace:
            return
        self._stale.add(shown)
        self._copy.forget()

    def verify_next(self) -> None:
        """Have the next pass walk the whole workspace rather than trust the
        watcher (as it does anyway every ``verify_every`` seconds): the check."""
        self._planner.walk_next()

    @property
    def watching(self) -> bool:
        """Whether passes drain a watcher's events (else each walks)."""
        return self._planner.watching

    @property
    def walks(self) -> int:
        """How many passes walked the whole workspace (the rest drained events)."""
        return self._planner.walks

    async def close(self) -> None:
        """Cancel the first index if it is still running; let go of its pins and
        its watches."""
        task, self._first = self._first, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._planner.close()
        if self._pinned:
            self._pinned = False
            try:
                await self._blobs.release(self._holder)
            except StoreUnavailable as exc:
                # Closing goes on: a dead holder's pins are dropped by gc or expire.
                log.warning("the workspace index's pins stay until gc drops them: %s", exc)

    async def _indexed_once(self) -> None:
        if self._indexed:
            return
        self.start()
        task = self._first
        assert task is not None
        try:
            # Shielded: a caller cancelled while waiting leaves the index to finish.
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # the caller was cancelled, not the index
            self._first = None
            raise
        except BaseException:
            self._first = None  # the next caller tries again
            raise

    async def _pass(self, report: bool) -> CapturedChanges:
        async with self._lock:
            stale = frozenset(self._stale)
            forgets = self._copy.forgets
            planner = self._planner
            diff = IndexDiff(self._files, self._folders, self._racy, stale, report)
            # The pins are renewed while a watched pass drains its events here, on
            # the loop: a thread's hand-off costs more than a few lstats.
            renewing = asyncio.ensure_future(self._pin([]))
            try:
                plan = planner.plan_now(diff)
            finally:
                await renewing
            if self._lapsed:
                await self._recover_pins()
                plan = None  # what it drained is pending still; the walk takes it
            if plan is None:
                plan = await asyncio.to_thread(planner.plan, diff)
            found, copy_id = await self._read(plan, stale)
            # No await from here on: a pass cancelled before this left the index as
            # it was, so nothing it saw is lost; the next pass sees it again.
            racy = _racy(plan, found, self._racy)
            self._copy.passed(plan, found, racy, stale, self._folders, copy_id, forgets)
            files = self._files
            for path in plan.removals:
                files.pop(path, None)
            files.update(plan.updates)
            for item, sig, blob in found:
                if sig is None:  # gone, or no longer a file, between the walk and the read
                    files.pop(item.path, None)
                    if item.old is not None and item.old[1] is not None:
                        if item.report:
                            plan.changes.append(deleted(item.path, item.old))
                    elif item.report:
                        plan.not_captured.append(item.path)
                    continue
                files[item.path] = (sig, blob)
                if item.report:
                    report_read(item, sig, blob, plan)
            planner.settle(plan, found, files)
            self._folders = plan.folders
            self._racy = {p for p in racy if p in files}
            self._stale -= stale
            self._indexed = True
            if not report:
                return CapturedChanges([], [])
            plan.changes.sort(key=lambda c: c.path)
            return CapturedChanges(plan.changes, sorted(set(plan.not_captured)))

    async def _read(self, plan: Plan, stale: frozenset[str]) -> tuple[list[Found], str | None]:
        """Read and store the files the plan names, and with the last batch the copy
        of the index the pass leaves (its blob, or None: save() stores it)."""
        found: list[Found] = []
        cut = list(batches(plan.reads))
        # The copy save() stores next, if a delta: stored with the last batch.
        names = self._copy.names(plan, len(self._files) + len(plan.folders))
        copy_id: str | None = None
        for n, batch in enumerate(cut):
            if len(batch) <= _INLINE_READS and sum(item.sig[0] for item in batch) <= _INLINE_BYTES:
                results = read_batch(self._roots[0], batch, self._max)
            else:
                results = await asyncio.to_thread(read_batch, self._roots[0], batch, self._max)
            # Each content hashed once here (the store hashes what it stores itself).
            hashed = [None if data is None else blob_id(data) for _, _, data in results]
            # A file read again whose content is the blob the index holds (a racy
            # one, most often) is not stored again: the index pins that blob.
            same = [
                blob is not None and item.old is not None and item.old[1] == blob
                for (item, _, _), blob in zip(results, hashed, strict=True)
            ]
            datas: list[bytes] = []
            local: list[str] = []
            for (_, _, data), blob, kept in zip(results, hashed, same, strict=True):
                if data is not None and blob is not None and not kept:
                    datas.append(data)
                    local.append(blob)
            if names is None or n != len(cut) - 1 or not datas:
                local = []
            else:
                # put_many stores each data as its blob_id: what the pass leaves
                # is known before it stores, and its copy goes in the same put.
                done = [*found, *_found(results, same, iter(local), plan.started_ns)]
                racy = _racy(plan, done, self._racy)
                copy = await self._copy.next(
                    names, self._files, self._folders, plan, done, racy, stale
                )
                if copy is not None:
                    datas.append(copy)
            # Pinned as they are stored: in PostgreSQL, in the same transaction.
            ids = await self._blobs.put_many(datas, self._holder) if datas else []
            self._pinned = True
            if len(ids) > len(local) > 0:
                copy_id, ids = ids[-1], ids[:-1]
                if ids != local:
                    copy_id = None  # not the copy's contents: save() stores one
            found.extend(_found(results, same, iter(ids), plan.started_ns))
        return found, copy_id

    async def _pin(self, blobs: list[str]) -> None:
        if not await self._blobs.pin(self._holder, blobs) and self._pinned:
            self._lapsed = True
            # Contents it held may be gone: a walk reads them.
            self._planner.walk_next()
        self._pinned = True

    async def _recover_pins(self) -> None:
        """The pins lapsed (an idle PostgreSQL holder's expire): pin again every blob
        the index holds, and forget those gc took meanwhile: their files are read
        again, while their stat still says what the blob held."""
        held = {blob for _, blob in self._files.values() if blob is not None}
        await self._blobs.pin(self._holder, held)
        gone = await self._blobs.missing(held)
        self._copy.lapsed()  # a copy save() stored may be gone too: store it again
        for path, (sig, blob) in list(self._files.items()):
            if blob in gone:
                self._files[path] = (sig, None)
        self._lapsed = False
        if gone:
            log.warning("%d snapshots the workspace index held were collected", len(gone))
