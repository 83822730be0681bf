"""Planning a pass of :class:`~.capture.WorkspaceIndex`: what the pass must look at,
found by draining the folder watcher's events or, when they cannot be trusted, by
walking the whole workspace.

The planner owns what only planning needs -- the walker, the watcher, the events
drained but not yet looked at by a finished pass, the files every pass must lstat or
read again -- so that the index keeps what it captured (its files, folders and racy
set) and hands it over as an :class:`~.capture_diff.IndexDiff` for each pass.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .capture_diff import Entry, IndexDiff, Plan, Read, under
from .capture_walk import Sig, Walker
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

log = logging.getLogger(__name__)

VERIFY_EVERY_S = 600.0
"""How long a watching index trusts its events before a pass walks the whole
workspace again: the check that finds what no event told of (see capture_watch)."""

INLINE_PATHS = 256
"""A watched pass that names at most this many paths is planned on the event loop
(a thread's hand-off costs more than a few lstats); so is the copy of the index
encoded that names at most this many."""

Found = tuple[Read, "Sig | None", "str | None"]
"""A file a pass read: its stat now (None: gone, or no longer a file) and the blob of
its content (None: it could not be read)."""


def unlisted_in(folders: Mapping[str, str]) -> set[str]:
    """The folders that could not be listed (their signature says so)."""
    return {k for k, sig in folders.items() if sig.startswith("unlisted")}


class PassPlanner:
    """Plans the passes of one index, one at a time; :meth:`settle` after each pass
    that finished, with what it read."""

    def __init__(
        self,
        roots: Sequence[Path],
        ignore: Sequence[str],
        max_file_bytes: int,
        *,
        watch: bool,
        verify_every: float,
        inotify: INotifyFactory | None,
    ) -> None:
        self._roots = roots
        self._walker = Walker(roots, ignore, max_file_bytes)
        # A pass cancelled while its walk runs leaves the walk running on its
        # thread; the next pass's walk waits for it rather than racing it.
        self._lock = threading.Lock()
        # Watching (see capture_watch): None until the first pass opens it, and
        # when it cannot be had or was given up (then every pass walks).
        self._watch = watch
        self._inotify = inotify
        self.watcher: FolderWatcher | None = None
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
        self.unlisted: set[str] = set()
        """Folders that could not be listed (their signature says so): while there
        are any, passes walk. Kept as passes go, not found by a look at every folder."""
        self.walks = 0
        """How many passes walked the whole workspace (the rest drained events)."""

    @property
    def watching(self) -> bool:
        return self.watcher is not None

    def walk_next(self) -> None:
        """Have the next pass walk rather than trust the watcher."""
        self._walk_due = True

    def close(self) -> None:
        """Let go of the watches; every pass walks from now on."""
        with self._lock:  # a cancelled pass's plan may still be draining
            self._unwatch()
            self._watch = False

    def plan_now(self, diff: IndexDiff) -> Plan | None:
        """A watched pass's plan, made here when the events name a few files only;
        None when it takes a thread (a walk, folders that came or went, many paths)."""
        watcher = self.watcher
        if watcher is None or not self._may_drain():
            return None
        if not self._lock.acquire(blocking=False):
            return None  # a cancelled pass's plan still runs on its thread
        try:
            started_ns = time.time_ns()
            try:
                found = watcher.drain()
            except WatchLost:
                return None  # the thread's plan walks (the watcher says why)
            extra = diff.stale | self._retry | self._linked
            if (
                found.new_folders
                or found.gone_folders
                or len(found.files) + len(self._pending.files) + len(extra) > INLINE_PATHS
            ):
                watcher.keep(found)  # for the thread's plan
                return None
            self._pending.files.update(found.files)
            self._pending.ignored.update(found.ignored)
            try:
                seen = self._look(diff, extra, started_ns)
            except WatchLost:
                return None
            return diff.seen(seen)
        finally:
            self._lock.release()

    def plan(self, diff: IndexDiff) -> Plan:
        """Drain the watcher's events, or walk; diff what was seen against the index
        (on a worker thread)."""
        with self._lock:
            watcher = self._watching()
            if watcher is not None and self._may_drain():
                started_ns = time.time_ns()
                try:
                    drain(watcher, self._walker, self._pending, diff.files, diff.folders)
                    extra = diff.stale | self._retry | self._linked
                    seen = self._look(diff, extra, started_ns)
                except WatchLost as exc:
                    log.info("capture walks the workspace: %s", exc)
                else:
                    return diff.seen(seen)
            return self._plan_walk(watcher, diff)

    def settle(self, plan: Plan, found: list[Found], files: Mapping[str, Entry]) -> None:
        """After a pass, whose result the index now holds as ``files``: what is
        pending, which folders are unlisted, which files' content is still unknown."""
        self._note_unlisted(plan)
        retry = self._retry
        if plan.looked is None:  # a walk: everything was looked at
            self._walk_due = False
            self._walked_at = time.monotonic()
            self._pending = Pending()
            self._linked = plan.linked
            stat_only = plan.stat_only
            self._retry = {
                path
                for path, (_, blob) in files.items()
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

    def _may_drain(self) -> bool:
        """Whether a pass may trust the watcher's events (else it walks)."""
        return (
            not self._walk_due
            and time.monotonic() - self._walked_at < self._verify_every
            and not self.unlisted
            and self._walker.exclude_sigs() == self._excludes
        )

    def _look(self, diff: IndexDiff, extra: set[str] | frozenset[str], started_ns: int) -> Seen:
        root = str(self._roots[0])
        return look(
            self._walker, root, self._pending, extra, diff.folders, self._linked, started_ns
        )

    def _watching(self) -> FolderWatcher | None:
        if self.watcher is None and self._watch:
            self._watch = False  # opened once: if it fails, every pass walks
            roots = [str(r) for r in self._roots]
            self.watcher = FolderWatcher.open(roots, self._inotify or default_inotify)
            if self.watcher is not None:
                # Every folder listed from now on -- by a walk, or a scan of one that
                # appeared -- is watched before it is listed.
                self._walker.watch = self.watcher.watch
                self._walker.watch_ignored = self.watcher.watch_ignored
        return self.watcher

    def _unwatch(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None
        self._walker.watch = self._walker.watch_ignored = None

    def _plan_walk(self, watcher: FolderWatcher | None, diff: IndexDiff) -> Plan:
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
        return diff.walk(walk)

    def _note_unlisted(self, plan: Plan) -> None:
        folders = plan.folders
        if plan.folders_touched is None:
            self.unlisted = unlisted_in(folders)
            return
        for key in plan.folders_touched:
            if folders.get(key, "").startswith("unlisted"):
                self.unlisted.add(key)
            else:
                self.unlisted.discard(key)
