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
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from .blob_pins import new_holder
from .blobs import BlobStore, blob_id
from .capture_diff import (
    CapturedChanges,
    Entry,
    IndexDiff,
    Plan,
    Read,
    deleted,
    report_read,
    under,
)
from .capture_read import batches, read_batch
from .capture_saved import (
    SavedDelta,
    SavedIndex,
    SinceWhole,
    after_pass,
    decode,
    encode,
    read_saved,
)
from .capture_walk import (
    Sig,
    Walker,
)
from .capture_watch import (
    FolderWatcher,
    INotifyFactory,
    Pending,
    Seen,
    WatchLost,
    default_inotify,
    drain,
    look,
)
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

VERIFY_EVERY_S = 600.0
"""How long a watching index trusts its events before a pass walks the whole
workspace again: the check that finds what no event told of (see capture_watch)."""

_INLINE_PATHS = 256
_INLINE_READS = 64
_INLINE_BYTES = 1024 * 1024
"""A watched pass that names at most this many paths, and reads at most this many
files and bytes, runs on the event loop: less than a thread's hand-off costs."""


_RACY_NS = 3_000_000_000
"""A file whose mtime is this close to the moment it was read may change again within
the same timestamp tick and keep its stat (ext4's clock ticks every few ms; ext3 and
HFS+ store whole seconds, FAT two). Such a file is read again at the next pass."""


Found = tuple[Read, "Sig | None", "str | None"]
"""A file a pass read: its stat now (None: gone, or no longer a file) and the blob of
its content (None: it could not be read)."""


def _found(
    results: list[tuple[Read, Sig | None, bytes | None]], same: list[bool], ids: Iterator[str]
) -> list[Found]:
    """What a batch read, with the blobs ``ids`` of the contents stored (those not
    ``same`` as the blob the index holds), in order."""
    return [
        (
            item,
            sig,
            None if data is None else item.old[1] if kept and item.old is not None else next(ids),
        )
        for (item, sig, data), kept in zip(results, same, strict=True)
    ]


def _racy(plan: Plan, found: list[Found]) -> set[str]:
    """The files read too close to the pass's start to trust their stat."""
    racy_from = plan.started_ns - _RACY_NS
    return {
        item.path
        for item, sig, blob in found
        if sig is not None and blob is not None and sig[1] >= racy_from
    }


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
        self._walker = Walker(self._roots, ignore, max_file_bytes)
        self._files: dict[str, Entry] = {}
        self._folders: dict[str, str] = {}
        self._racy: set[str] = set()
        self._stale: set[str] = set()
        self._lock = asyncio.Lock()
        # A pass cancelled while its walk runs leaves the walk running on its
        # thread; the next pass's walk waits for it rather than racing it.
        self._plan_lock = threading.Lock()
        self._first: asyncio.Task[CapturedChanges] | None = None
        self._indexed = False
        self._holder = new_holder()
        self._pinned = False
        self._lapsed = False
        self._saved: str | None = None
        """The blob of :meth:`save`'s copy (or of the one the last pass stored with
        its contents), while the index is as it was then."""
        self._saved_racy: set[str] = set()
        """The files that copy has read again: a pass that only drops some from the
        racy set leaves the copy good (it reads more than it needs)."""
        self._forgets = 0
        """How many times :meth:`forget` was called: one during a pass makes the
        copy that pass stored not the index."""
        self._since = SinceWhole()
        """The last whole copy :meth:`save` stored, and what changed since."""
        self._unlisted: set[str] = set()
        """Folders that could not be listed (their signature says so): while there
        are any, passes walk. Kept as passes go, not found by a look at every folder."""
        # Watching (see capture_watch): None until the first pass opens it, and
        # when it cannot be had or was given up (then every pass walks).
        self._watch = watch
        self._inotify = inotify
        self._watcher: FolderWatcher | None = None
        self._verify_every = verify_every
        self._walked_at = 0.0
        self._walk_due = True
        self._excludes: list[Sig | None] = []
        self._pending = Pending()
        """What drained events named that no finished pass has looked at yet: a pass
        cancelled after its drain leaves them to the next."""
        self._linked: set[str] = set()
        """Files with other hard links: lstat'ed by every pass (see Walk.linked)."""
        self._retry: set[str] = set()
        """Captured files whose content is not known (it could not be read): read
        again by every pass, as a walk does."""
        self.walks = 0
        """How many passes walked the whole workspace (the rest drained events)."""

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
            if self._saved is None:
                since = self._since
                whole = since.whole_due(len(self._files) + len(self._folders))
                if whole:
                    # On a worker thread: ~0.1 s for 100,000 files.
                    data = await asyncio.to_thread(self._encode)
                elif since.size > _INLINE_PATHS:
                    data = await asyncio.to_thread(self._encode_delta)
                else:
                    data = self._encode_delta()
                # Pinned as the contents are: the next command's capture_started
                # names this copy again while the index is unchanged, so gc must
                # not take it in between. A delta's base was pinned when stored.
                (self._saved,) = await self._blobs.put_many([data], self._holder)
                self._saved_racy = self._racy | self._stale
                self._pinned = True
                if whole:
                    since.stored_whole(self._saved)
            return self._saved

    def _encode(self) -> bytes:
        return encode(self._roots, self._files, self._folders, self._racy | self._stale)

    def _encode_delta(self) -> bytes:
        return self._since.delta(self._roots, self._files, self._folders, self._racy | self._stale)

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
        index._unlisted = {k for k, sig in copy.folders.items() if sig.startswith("unlisted")}
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
        self._saved = None
        self._forgets += 1

    def verify_next(self) -> None:
        """Have the next pass walk the whole workspace rather than trust the
        watcher (as it does anyway every ``verify_every`` seconds): the check."""
        self._walk_due = True

    @property
    def watching(self) -> bool:
        """Whether passes drain a watcher's events (else each walks)."""
        return self._watcher is not None

    async def close(self) -> None:
        """Cancel the first index if it is still running; let go of its pins and
        its watches."""
        task, self._first = self._first, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        with self._plan_lock:  # a cancelled pass's plan may still be draining
            self._unwatch()
            self._watch = False
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
            forgets = self._forgets
            # The pins are renewed while a watched pass drains its events here, on
            # the loop: a thread's hand-off costs more than a few lstats.
            renewing = asyncio.ensure_future(self._pin([]))
            try:
                plan = self._plan_now(stale, report)
            finally:
                await renewing
            if self._lapsed:
                await self._recover_pins()
                plan = None  # what it drained is pending still; the walk takes it
            if plan is None:
                plan = await asyncio.to_thread(self._plan, stale, report)
            found: list[Found] = []
            cut = list(batches(plan.reads))
            # The copy save() stores next, if a delta: stored with the last batch.
            names = (
                self._since.after(
                    [*plan.removals, *plan.updates, *(item.path for item in plan.reads)],
                    plan.folders_touched,
                    len(self._files) + len(plan.folders),
                )
                if plan.reads
                else None
            )
            copy_id: str | None = None
            for n, batch in enumerate(cut):
                if (
                    len(batch) <= _INLINE_READS
                    and sum(item.sig[0] for item in batch) <= _INLINE_BYTES
                ):
                    results = read_batch(self._roots[0], batch, self._max)
                else:
                    results = await asyncio.to_thread(read_batch, self._roots[0], batch, self._max)
                # A file read again whose content is the blob the index holds (a racy
                # one, most often) is not stored again: the index pins that blob.
                same = [
                    data is not None and item.old is not None and item.old[1] == blob_id(data)
                    for item, _, data in results
                ]
                datas = [
                    data
                    for (_, _, data), kept in zip(results, same, strict=True)
                    if data is not None and not kept
                ]
                local: list[str] = []
                if names is not None and n == len(cut) - 1 and datas:
                    # put_many stores each data as its blob_id: what the pass leaves
                    # is known before it stores, and its copy goes in the same put.
                    local = [blob_id(data) for data in datas]
                    done = [*found, *_found(results, same, iter(local))]
                    racy = _racy(plan, done)
                    if self._moves_copy(plan, done, racy, stale):
                        datas.append(await self._next_copy(names, plan, done, racy))
                # Pinned as they are stored: in PostgreSQL, in the same transaction.
                ids = await self._blobs.put_many(datas, self._holder) if datas else []
                self._pinned = True
                if len(ids) > len(local) > 0:
                    copy_id, ids = ids[-1], ids[:-1]
                    if ids != local:
                        copy_id = None  # not the copy's contents: save() stores one
                found.extend(_found(results, same, iter(ids)))
            # No await from here on: a pass cancelled before this left the index as
            # it was, so nothing it saw is lost; the next pass sees it again.
            racy = _racy(plan, found)
            if self._moves_copy(plan, found, racy, stale):
                # What save() stored is no longer the index; this pass's copy is, unless
                # the engine forgot a file meanwhile (which the copy does not name).
                self._saved = copy_id if forgets == self._forgets else None
                self._saved_racy = racy
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
            self._since.changed(
                [*plan.removals, *plan.updates, *(item.path for item, _, _ in found)],
                plan.folders_touched,
            )
            self._note_unlisted(plan)
            self._folders = plan.folders
            self._racy = racy
            self._stale -= stale
            self._indexed = True
            self._settle(plan, found)
            if not report:
                return CapturedChanges([], [])
            plan.changes.sort(key=lambda c: c.path)
            return CapturedChanges(plan.changes, sorted(set(plan.not_captured)))

    async def _pin(self, blobs: list[str]) -> None:
        if not await self._blobs.pin(self._holder, blobs) and self._pinned:
            self._lapsed = True
            self._walk_due = True  # contents it held may be gone: a walk reads them
        self._pinned = True

    async def _recover_pins(self) -> None:
        """The pins lapsed (an idle PostgreSQL holder's expire): pin again every blob
        the index holds, and forget those gc took meanwhile: their files are read
        again, while their stat still says what the blob held."""
        held = {blob for _, blob in self._files.values() if blob is not None}
        await self._blobs.pin(self._holder, held)
        gone = await self._blobs.missing(held)
        self._saved = None  # a copy save() stored may be gone too: store it again
        self._since.base = None  # and a whole one, which a delta would name
        for path, (sig, blob) in list(self._files.items()):
            if blob in gone:
                self._files[path] = (sig, None)
        self._lapsed = False
        if gone:
            log.warning("%d snapshots the workspace index held were collected", len(gone))

    def _plan_now(self, stale: frozenset[str], report: bool) -> Plan | None:
        """A watched pass's plan, made here when the events name a few files only;
        None when it takes a thread (a walk, folders that came or went, many paths)."""
        watcher = self._watcher
        if watcher is None or not self._may_drain():
            return None
        if not self._plan_lock.acquire(blocking=False):
            return None  # a cancelled pass's plan still runs on its thread
        try:
            started_ns = time.time_ns()
            try:
                found = watcher.drain()
            except WatchLost:
                return None  # the thread's plan walks (the watcher says why)
            extra = stale | self._racy | self._retry | self._linked
            if (
                found.new_folders
                or found.gone_folders
                or len(found.files) + len(self._pending.files) + len(extra) > _INLINE_PATHS
            ):
                watcher.keep(found)  # for the thread's plan
                return None
            self._pending.files.update(found.files)
            self._pending.ignored.update(found.ignored)
            try:
                seen = self._look(extra, started_ns)
            except WatchLost:
                return None
            return self._diff(stale, report).seen(seen)
        finally:
            self._plan_lock.release()

    def _may_drain(self) -> bool:
        """Whether a pass may trust the watcher's events (else it walks)."""
        return (
            not self._walk_due
            and time.monotonic() - self._walked_at < self._verify_every
            and not self._unlisted
            and self._walker.exclude_sigs() == self._excludes
        )

    def _look(self, extra: set[str] | frozenset[str], started_ns: int) -> Seen:
        root = str(self._roots[0])
        return look(
            self._walker, root, self._pending, extra, self._folders, self._linked, started_ns
        )

    def _plan(self, stale: frozenset[str], report: bool) -> Plan:
        """Drain the watcher's events, or walk; diff what was seen against the index
        (on a worker thread)."""
        with self._plan_lock:
            watcher = self._watching()
            if watcher is not None and self._may_drain():
                started_ns = time.time_ns()
                try:
                    drain(watcher, self._walker, self._pending, self._files, self._folders)
                    seen = self._look(stale | self._racy | self._retry | self._linked, started_ns)
                except WatchLost as exc:
                    log.info("capture walks the workspace: %s", exc)
                else:
                    return self._diff(stale, report).seen(seen)
            return self._plan_walk(watcher, stale, report)

    def _watching(self) -> FolderWatcher | None:
        if self._watcher is None and self._watch:
            self._watch = False  # opened once: if it fails, every pass walks
            roots = [str(r) for r in self._roots]
            self._watcher = FolderWatcher.open(roots, self._inotify or default_inotify)
            if self._watcher is not None:
                # Every folder listed from now on -- by a walk, or a scan of one that
                # appeared -- is watched before it is listed.
                self._walker.watch = self._watcher.watch
                self._walker.watch_ignored = self._watcher.watch_ignored
        return self._watcher

    def _unwatch(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        self._walker.watch = self._walker.watch_ignored = None

    def _plan_walk(
        self, watcher: FolderWatcher | None, stale: frozenset[str], report: bool
    ) -> Plan:
        # Until this pass is done (a cancelled one leaves it so): the events it
        # reads away below are the walk's to find.
        self._walk_due = True
        self._excludes = self._walker.exclude_sigs()
        if watcher is not None:
            watcher.read()  # what is queued the walk sees anyway
            watcher.begin_walk()
        walk = self._walker.walk()
        if watcher is not None:
            watcher.end_walk()
            if watcher.lost is not None:
                log.warning("capture walks the workspace from now on: %s", watcher.lost)
                self._unwatch()
        self.walks += 1
        return self._diff(stale, report).walk(walk)

    def _folders_changed(self, plan: Plan) -> bool:
        """Whether the pass changed the folders the index holds (of a watched pass,
        only those its events named can have changed)."""
        old = self._folders
        if plan.folders_touched is None:
            return plan.folders != old
        return any(plan.folders.get(key) != old.get(key) for key in plan.folders_touched)

    def _note_unlisted(self, plan: Plan) -> None:
        folders = plan.folders
        if plan.folders_touched is None:
            self._unlisted = {k for k, sig in folders.items() if sig.startswith("unlisted")}
            return
        for key in plan.folders_touched:
            if folders.get(key, "").startswith("unlisted"):
                self._unlisted.add(key)
            else:
                self._unlisted.discard(key)

    def _diff(self, stale: frozenset[str], report: bool) -> IndexDiff:
        return IndexDiff(self._files, self._folders, self._racy, stale, report)

    def _moves_copy(
        self, plan: Plan, found: list[Found], racy: set[str], stale: frozenset[str]
    ) -> bool:
        """Whether the pass leaves the index other than the copy save() stored says:
        not when it read racy files again unchanged, nor when the racy set shrank
        (a copy naming more racy files has them read again: it misses nothing)."""
        return bool(
            plan.updates
            or plan.removals
            or stale
            or not racy <= self._saved_racy
            or any(item.old != (None if sig is None else (sig, blob)) for item, sig, blob in found)
            or self._folders_changed(plan)
        )

    async def _next_copy(
        self, names: tuple[set[str], set[str]], plan: Plan, found: list[Found], racy: set[str]
    ) -> bytes:
        """The delta save() would store after the pass, of the index as the pass will
        leave it -- not changed yet: a pass that fails or is cancelled leaves it be."""
        read = ((item.path, None if sig is None else (sig, blob)) for item, sig, blob in found)
        files = after_pass(self._files, plan.removals, plan.updates, read)
        encode_delta = functools.partial(
            self._since.delta, self._roots, files, plan.folders, racy, names
        )
        if len(names[0]) + len(names[1]) > _INLINE_PATHS:
            return await asyncio.to_thread(encode_delta)
        return encode_delta()

    def _settle(self, plan: Plan, found: list[Found]) -> None:
        """After a pass: what is pending, and which files' content is still unknown."""
        retry = self._retry
        if plan.looked is None:  # a walk: everything was looked at
            self._walk_due = False
            self._walked_at = time.monotonic()
            self._pending = Pending()
            self._linked = plan.linked
            stat_only = plan.stat_only
            self._retry = {
                path
                for path, (_, blob) in self._files.items()
                if blob is None and path not in stat_only and not under(path, plan.folders)
            }
            return
        self._pending.settle(plan.looked)
        self._linked.difference_update(plan.seen)
        self._linked.update(plan.linked)
        retry.difference_update(plan.removals)
        retry.difference_update(plan.updates)
        for item, sig, blob in found:
            if sig is None or blob is not None:
                retry.discard(item.path)
            else:
                retry.add(item.path)
