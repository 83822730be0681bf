"""Diffing what a capture pass saw against the workspace index.

A pass sees the workspace by stat alone -- a walk of it all, or a look at what a
watcher's events named (see capture_walk, capture_watch). Diffing that against the
index gives the pass's plan: the files whose content it must read, the entries that
change by stat only, those that went, and the changes it can tell without reading.
What the reads then find is added to the plan by :func:`report_read`.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from .capture_walk import Sig, Walk, is_executable, is_regular
from .capture_watch import Pending, Seen


@attrs.define
class FileChange:
    """One file a command created, changed or deleted."""

    path: str
    """Display path: posix, relative to the first root (absolute for other roots)."""
    before: str | None
    """Blob id of the content before; None if the file did not exist."""
    after: str | None
    """Blob id of the content after; None if the file was deleted."""
    executable_before: bool | None
    """The owner-exec bit before; None if the file did not exist."""
    executable_after: bool | None


@attrs.define
class CapturedChanges:
    """What :meth:`~.capture.WorkspaceIndex.changes` found.

    Changes deep inside an ignored folder (``node_modules/``, a .gitignored folder)
    are not seen: only the folder's own entries are looked at.
    """

    changes: list[FileChange]
    """Sorted by path. A rename is a delete plus a create."""
    not_captured: list[str]
    """Sorted paths that changed but were not captured: files over the size cap,
    .gitignored files, symlinks and other non-files, files that could not be read
    (or vanished while being read, or whose content before was not known), and
    ignored folders whose own entries changed, shown with a slash ("node_modules/")."""


Entry = tuple[Sig, "str | None"]
"""An index entry: the lstat signature, and the blob of the content it had (None if
not captured)."""


@attrs.define
class Read:
    """A file a pass reads: its stat moved, it is racy, or its content is not known."""

    path: str
    sig: Sig
    old: Entry | None
    report: bool
    """A change of it is the command's: not a refresh, not the engine's own write,
    not a file that turned up in a folder that was not walked before."""


@attrs.define
class Plan:
    """What a pass found by stat alone, and what it must read."""

    reads: list[Read]
    updates: dict[str, Entry]
    removals: list[str]
    changes: list[FileChange]
    not_captured: list[str]
    folders: dict[str, str]
    started_ns: int
    stat_only: set[str] = attrs.Factory(set)
    """Of the files looked at, those kept by stat only."""
    looked: Pending | None = None
    """What drained events named that the pass looked at; None for a walk."""
    linked: set[str] = attrs.Factory(set)
    """Of the files looked at, those with other hard links."""
    seen: set[str] = attrs.Factory(set)
    """The paths a watched pass looked at (of a walk: unused)."""
    folders_touched: set[str] | None = None
    """The keys of ``folders`` a watched pass may have changed; None for a walk."""


@attrs.frozen
class IndexDiff:
    """The index as a pass began, against which what the pass saw is diffed."""

    files: Mapping[str, Entry]
    folders: Mapping[str, str]
    """Folders the index has walked (keys ending in "/"), and ignored folders'
    signatures."""
    racy: set[str]
    """Files read too close to a change to trust their stat (read again)."""
    stale: frozenset[str]
    """Files the engine's own tools changed: read again, not reported."""
    report: bool
    """Whether changes are the command's (else a refresh: nothing is reported)."""

    def walk(self, walk: Walk) -> Plan:
        """The plan of a pass that walked the whole workspace."""
        files, old_folders = self.files, self.folders
        plan = Plan(
            [],
            {},
            [],
            [],
            [],
            dict(walk.folders),
            walk.started_ns,
            walk.stat_only,
            None,
            walk.linked,
        )
        for path, sig in walk.files.items():
            self._file(plan, path, sig)
        for path in files.keys() - walk.files.keys():
            if not under(path, walk.folders):  # in a folder not walked now: kept
                self._gone(plan, path)
        for key in walk.folders.keys() | old_folders.keys():
            now, then = walk.folders.get(key), old_folders.get(key)
            if now is None and under(key, walk.folders):
                plan.folders[key] = old_folders[key]  # in a folder that could not be listed
            elif now != then and self.report:
                plan.not_captured.append(key)
        return plan

    def seen(self, seen: Seen) -> Plan:
        """As :meth:`walk`, of only what the watcher's events named."""
        folders = dict(self.folders)
        plan = Plan(
            [], {}, [], [], [], folders, seen.started_ns, seen.stat_only, seen.looked, seen.linked
        )
        plan.seen = seen.files.keys() | seen.gone
        plan.folders_touched = set(seen.ignored)
        for key, signed in seen.ignored.items():
            then = folders.pop(key, None)
            if signed is not None:
                folders[key] = signed
            if signed != then and self.report:
                plan.not_captured.append(key)
        for path, sig in seen.files.items():
            self._file(plan, path, sig)
        for path in seen.gone:
            if path in self.files and not under(path, folders):
                self._gone(plan, path)
        return plan

    def _file(self, plan: Plan, path: str, sig: Sig) -> None:
        old = self.files.get(path)
        stale = self.stale
        stat_only = plan.stat_only
        if old is not None and old[0] == sig and path not in self.racy and path not in stale:
            if old[1] is None and path not in stat_only:  # content not known yet
                plan.reads.append(Read(path, sig, old, False))
            return
        # New here, but in a folder not walked before: what it held then is unknown.
        tell = self.report and path not in stale and not (old is None and under(path, self.folders))
        if path not in stat_only:
            plan.reads.append(Read(path, sig, old, tell))
            return
        if old is not None and old[0] == sig:
            return  # a stale or racy entry now kept by stat only: nothing to read
        plan.updates[path] = (sig, None)
        if tell:
            plan.not_captured.append(path)
            if old is not None and old[1] is not None and not is_regular(sig):
                # A file replaced by a symlink (or a fifo): the file is gone.
                plan.changes.append(deleted(path, old))

    def _gone(self, plan: Plan, path: str) -> None:
        plan.removals.append(path)
        old = self.files[path]
        if self.report and path not in self.stale:
            if old[1] is not None:
                plan.changes.append(deleted(path, old))
            else:
                plan.not_captured.append(path)


def report_read(item: Read, sig: Sig, blob: str | None, plan: Plan) -> None:
    """Add what reading ``item`` found to ``plan``'s changes or not_captured."""
    old = item.old
    if blob is None or (old is not None and old[1] is None):
        plan.not_captured.append(item.path)  # the content now, or before, is not known
    elif old is None:
        plan.changes.append(FileChange(item.path, None, blob, None, is_executable(sig)))
    elif old[1] != blob or is_executable(old[0]) != is_executable(sig):
        plan.changes.append(
            FileChange(item.path, old[1], blob, is_executable(old[0]), is_executable(sig))
        )


SMUDGED = -1
"""The size an entry's stat is kept with when the file was read too close to a change
to trust its stat (racy): no lstat gives it, so whichever pass looks at the file
next reads it again. This is git's racy-git smudge. A watching index looks at the
file only when an event names it, and every write after the read is an event (its
folder was watched before it was read), as git trusts fsmonitor over its racy
check; a walk looks at every file. Back-to-back commands do not read again what the
last ones wrote, and the index keeps no set of such files that grows between walks."""


def smudged(sig: Sig) -> Sig:
    return (SMUDGED, sig[1], sig[2], sig[3])


def trusts_no_more(old: Entry | None, new: Entry | None) -> bool:
    """Whether an index holding ``old`` for a file misses nothing that one holding
    ``new`` would see: the same, or ``old`` its smudged form (read again sooner)."""
    if old == new:
        return True
    return (
        old is not None
        and new is not None
        and old[0][0] == SMUDGED
        and old[1] == new[1]
        and old[0][1:] == new[0][1:]
    )


def deleted(path: str, old: Entry) -> FileChange:
    return FileChange(path, old[1], None, is_executable(old[0]), None)


def under(path: str, folders: Mapping[str, object]) -> bool:
    """Whether ``path`` is inside one of ``folders`` (keys ending in "/")."""
    if not folders:
        return False
    if "./" in folders and not path.startswith("/"):
        return True
    cut = path.find("/", 1)
    while cut != -1:
        if path[: cut + 1] in folders:
            return True
        cut = path.find("/", cut + 1)
    return False
