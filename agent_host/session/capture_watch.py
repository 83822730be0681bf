"""The filesystem watcher behind :class:`~.capture.WorkspaceIndex`: inotify on each
folder a walk lists, so that a pass after the first costs a drain of events and an
lstat of the paths they name, not a walk of the tree.

One watch per walked folder, set before the folder is listed (a change after the
listing is an event), and one on each ignored folder itself -- never on its tree --
so that a change of its own entries (what the walk's folder signature covers) is
still seen. ``.git`` is such an ignored folder.

What a drain cannot vouch for it says, and the index walks instead: the kernel's
queue overflowed (``IN_Q_OVERFLOW``), a watch could not be added (``ENOSPC``: the
user's ``max_user_watches`` is spent), a .gitignore changed, a root went away.
Without inotify (not Linux, the binding missing, ``inotify_init`` refused) there is
no watcher and every pass walks. Writes that raise no event -- through a shared
mmap, through a hard link from outside the roots, on a network filesystem -- are
found by the periodic walk, which the index runs as its check.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .capture_walk import Sig, Walk, Walker, sig_of, sign_folder
from .workspace.dirfd import DIR_FLAGS, is_temp_name, sweep_temp

if TYPE_CHECKING:
    import inotify_simple

log = logging.getLogger(__name__)

# The inotify(7) bits, as the kernel defines them.
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

WATCH_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
"""Every change of a folder's entries (content, metadata, names); IN_MODIFY as well
as IN_CLOSE_WRITE, since a writer that keeps its file open changes it all the same.
Never through a symlink, and only on folders."""


class WatchLost(Exception):
    """The watcher cannot say what changed (it names why): walk instead."""


@attrs.define
class _Watched:
    path: str
    """Absolute path of the folder."""
    shown: str
    """The display prefix of its entries (a tree folder), or its own display key
    ending in "/" (an ignored folder, whose entries are not captured)."""
    ignored: bool


@attrs.define
class Drained:
    """What the events since the last drain name. Paths are display paths."""

    files: dict[str, str] = attrs.Factory(dict)
    """Entries (not known to be folders) that changed: display path -> absolute path."""
    new_folders: dict[str, tuple[str, str]] = attrs.Factory(dict)
    """Folders that appeared (made, moved in, or whose mode changed): display path ->
    (absolute parent, name)."""
    gone_folders: dict[str, str] = attrs.Factory(dict)
    """Folders that went away (removed, moved out, or whose mode changed): display
    path + "/" -> absolute path."""
    ignored: dict[str, str] = attrs.Factory(dict)
    """Ignored folders whose own entries changed: display key -> absolute path."""


INotifyFactory = Callable[[], "inotify_simple.INotify"]


def default_inotify() -> inotify_simple.INotify:
    import inotify_simple  # loaded when a workspace is first watched

    return inotify_simple.INotify(nonblocking=True)


class FolderWatcher:
    """One inotify instance and its watches, for one workspace index. Not thread-safe:
    the index drains and adds watches under its plan lock."""

    def __init__(self, inotify: Any, roots: Iterable[str]) -> None:
        self._inotify = inotify
        self._roots = frozenset(roots)
        self._by_wd: dict[int, _Watched] = {}
        self._by_path: dict[str, int] = {}
        self._seen: set[int] | None = None
        self._kept: Drained | None = None
        self.lost: str | None = None
        """Why the watches cannot be trusted until the next walk (None: they can)."""

    @classmethod
    def open(
        cls, roots: Iterable[str], factory: INotifyFactory = default_inotify
    ) -> FolderWatcher | None:
        """A watcher, or None where inotify cannot be had (logged once, by the caller's
        index, as the reason every pass walks)."""
        try:
            inotify = factory()
        except (ImportError, OSError, AttributeError) as exc:
            # AttributeError: a libc without inotify_init1 (not Linux).
            log.info("no filesystem watcher (%s): every capture walks the workspace", exc)
            return None
        return cls(inotify, roots)

    def begin_walk(self) -> None:
        """A walk starts: the watches it does not set again are removed at its end."""
        self._seen = set()
        self._kept = None  # what the walk sees anyway
        self.lost = None

    def end_walk(self) -> None:
        seen, self._seen = self._seen, None
        if seen is None or self.lost is not None:
            return
        for wd in [wd for wd in self._by_wd if wd not in seen]:
            self._remove(wd)

    def watch(self, path: str, shown: str) -> None:
        self._add(path, shown, ignored=False)

    def watch_ignored(self, path: str, shown: str) -> None:
        self._add(path, shown, ignored=True)

    def _add(self, path: str, shown: str, ignored: bool) -> None:
        if self.lost is not None:
            return
        try:
            wd = self._inotify.add_watch(path, WATCH_MASK)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return  # gone, or swapped for a symlink: its parent's event says so
            if exc.errno == errno.ENOSPC:
                self.lost = "the inotify watch limit (fs.inotify.max_user_watches) is reached"
            else:
                self.lost = f"a folder could not be watched: {exc}"
            return
        old = self._by_wd.get(wd)
        if old is not None and old.path != path:
            if _same_folder(old.path, path):
                # One folder under two paths (a bind mount): events cannot say which.
                self.lost = f"{old.path} and {path} are one folder"
                return
            if self._by_path.get(old.path) == wd:  # moved here since it was watched
                del self._by_path[old.path]
        prior = self._by_path.get(path)
        if prior is not None and prior != wd:
            self._by_wd.pop(prior, None)
        self._by_wd[wd] = _Watched(path, shown, ignored)
        self._by_path[path] = wd
        if self._seen is not None:
            self._seen.add(wd)

    def forget_under(self, path: str) -> None:
        """The folder at ``path`` went away: its watches and those under it go too."""
        cut = path + "/"
        for watched, wd in list(self._by_path.items()):
            if watched == path or watched.startswith(cut):
                self._remove(wd)

    def _remove(self, wd: int) -> None:
        watched = self._by_wd.pop(wd, None)
        if watched is not None and self._by_path.get(watched.path) == wd:
            del self._by_path[watched.path]
        try:
            self._inotify.rm_watch(wd)
        except OSError:
            pass  # already gone with its folder (EINVAL): nothing to remove

    def read(self) -> list[tuple[int, int, int, str]]:
        """The events queued, without waiting (the boundary a test may stand in for)."""
        events: list[tuple[int, int, int, str]] = []
        while True:
            got = self._inotify.read(timeout=0)
            if not got:
                return events
            events.extend(got)

    def drain(self) -> Drained:
        """What changed since the last drain. Raises WatchLost where only a walk can
        tell (the index then walks, and the walk sets the watches again)."""
        if self.lost is not None:
            raise WatchLost(self.lost)
        events = self.read()
        found, self._kept = self._kept or Drained(), None
        by_wd = self._by_wd
        for wd, mask, _cookie, name in events:
            if mask & IN_Q_OVERFLOW:
                self.lost = "the inotify queue overflowed (fs.inotify.max_queued_events)"
                raise WatchLost(self.lost)
            watched = by_wd.get(wd)
            if watched is None:
                continue  # a watch removed since: its folder's parent told of it
            if mask & IN_IGNORED:
                self._by_wd.pop(wd, None)
                if self._by_path.get(watched.path) == wd:
                    del self._by_path[watched.path]
                continue
            if mask & IN_UNMOUNT or (
                mask & (IN_DELETE_SELF | IN_MOVE_SELF) and watched.path in self._roots
            ):
                self.lost = f"{watched.path} was moved, removed or unmounted"
                raise WatchLost(self.lost)
            if watched.ignored:
                if name or mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                    found.ignored[watched.shown] = watched.path
                continue
            if not name:
                continue  # the folder itself: its parent's watch tells what matters
            if name == ".gitignore":
                self.lost = f"{watched.path}/.gitignore changed"
                raise WatchLost(self.lost)
            shown = watched.shown + name
            if mask & IN_ISDIR:
                path = watched.path + "/" + name
                if mask & (IN_DELETE | IN_MOVED_FROM | IN_ATTRIB):
                    found.gone_folders[shown + "/"] = path
                if mask & (IN_CREATE | IN_MOVED_TO | IN_ATTRIB):
                    found.new_folders[shown] = (watched.path, name)
            else:
                found.files[shown] = watched.path + "/" + name
        return found

    def keep(self, found: Drained) -> None:
        """Hand ``found`` back: the next drain returns it with what came since."""
        self._kept = found

    def close(self) -> None:
        self._by_wd.clear()
        self._by_path.clear()
        self._inotify.close()


def _same_folder(a: str, b: str) -> bool:
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


@attrs.define
class Pending:
    """What drained events named that no finished pass has looked at yet: display
    paths (the absolute path of one is the first root joined with it)."""

    files: set[str] = attrs.Factory(set)
    """Entries to lstat."""
    ignored: set[str] = attrs.Factory(set)
    """Ignored folders (display keys, ending in "/") to sign again."""

    def copy(self) -> Pending:
        return Pending(set(self.files), set(self.ignored))

    def settle(self, done: Pending) -> None:
        """What ``done`` held was looked at by a finished pass."""
        self.files -= done.files
        self.ignored -= done.ignored


@attrs.define
class Seen:
    """What a watched pass saw: the part of a walk the events named."""

    files: dict[str, Sig]
    """display path -> sig of the named entries that are there and not folders."""
    stat_only: set[str]
    gone: set[str]
    """Named entries that are not there (or are folders now), and the entries under
    folders that went away. One under a folder not walked stays as it was."""
    ignored: dict[str, str | None]
    """Ignored folders signed again: display key -> signature (None: gone)."""
    linked: set[str]
    """Of ``files``, those with other hard links."""
    started_ns: int
    looked: Pending
    """What the pass looked at (settled in the index once the pass is done)."""


def drain(
    watcher: FolderWatcher,
    walker: Walker,
    pending: Pending,
    files: Iterable[str],
    folders: Iterable[str],
) -> None:
    """Add to ``pending`` what the events since the last drain name: the entries
    under folders that went away (of ``files`` and ``folders``, the index's), and
    everything in folders that appeared (watched before they are listed). Raises
    WatchLost where only a walk can tell."""
    found = watcher.drain()
    pending.files.update(found.files)
    pending.ignored.update(found.ignored)
    if found.gone_folders:
        for path in found.gone_folders.values():
            watcher.forget_under(path)
            walker.forget_folders(path)
        cuts = tuple(found.gone_folders)
        pending.files.update(held for held in files if held.startswith(cuts))
        pending.ignored.update(key for key in folders if key.startswith(cuts))
    gone = tuple(path + "/" for path in found.gone_folders.values())
    scanned_under: list[str] = []
    # Outermost first: a folder inside one scanned here was scanned with it.
    for parent, name in sorted(found.new_folders.values(), key=lambda pn: len(pn[0])):
        if (parent + "/").startswith(tuple(scanned_under)):
            continue
        scanned = Walk({}, set(), {}, 0)
        if not walker.scan(parent, name, scanned):
            if (parent + "/").startswith(gone):
                continue  # in a folder that went away: gone with it
            raise WatchLost(f"{parent}/{name} appeared where no walk looked")
        scanned_under.append(parent + "/" + name + "/")
        if watcher.lost is not None:
            raise WatchLost(watcher.lost)
        for key, sig in scanned.folders.items():
            if sig.startswith("unlisted"):
                raise WatchLost(f"{key} cannot be listed")
            pending.ignored.add(key)
        pending.files.update(scanned.files)  # (hard links among them: seen by look)


def look(
    walker: Walker,
    root: str,
    pending: Pending,
    extra: Iterable[str],
    folders: Mapping[str, str],
    linked: set[str],
    started_ns: int,
) -> Seen:
    """lstat the files ``pending`` and ``extra`` name (display paths under the first
    root ``root``), and sign again the ignored folders they name (keys ending in
    "/"). ``linked`` is what the index knows to have other hard links: a new one
    raises WatchLost (its other names are known only to a walk)."""
    looked = pending.copy()
    seen = Seen({}, set(), set(), {}, set(), started_ns, looked)
    resign = set(looked.ignored)
    for shown in looked.files.union(extra):
        if shown.endswith("/"):
            resign.add(shown)
            continue
        path = os.path.join(root, shown)
        parent, name = path.rsplit("/", 1)
        if walker.display(parent) is None:
            # Not in a walked folder: one that went away (or was swapped for a
            # symlink), or one not walked (kept as it was, as a walk keeps it).
            seen.gone.add(shown)
            continue
        if is_temp_name(name):
            _sweep(parent, name)  # as a walk does: one whose writer is gone
            continue
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            seen.gone.add(shown)
            continue
        except OSError as exc:
            raise WatchLost(f"{path} cannot be looked at: {exc}") from exc
        if stat.S_ISDIR(st.st_mode):
            seen.gone.add(shown)  # a folder now: its own event scans it
            continue
        sig = sig_of(st)
        seen.files[shown] = sig
        if st.st_nlink > 1:
            if shown not in linked:
                raise WatchLost(f"{shown} has a new hard link")
            seen.linked.add(shown)
        if walker.classify(parent, name, sig):
            seen.stat_only.add(shown)
    for key in resign:
        if key not in folders and not _parent_walked(walker, root, key):
            continue
        signed, has_link = sign_folder(os.path.join(root, key.rstrip("/")))
        if has_link:
            if key not in linked:
                raise WatchLost(f"{key} holds a new hard link")
            seen.linked.add(key)
        seen.ignored[key] = signed
    return seen


def _sweep(parent: str, name: str) -> None:
    try:
        fd = os.open(parent, DIR_FLAGS)
    except OSError:
        return  # gone with its folder
    try:
        sweep_temp(fd, name)
    finally:
        os.close(fd)


def _parent_walked(walker: Walker, root: str, key: str) -> bool:
    return walker.display(os.path.join(root, key.rstrip("/")).rsplit("/", 1)[0]) is not None
