"""The stat walk behind :class:`~.capture.WorkspaceIndex`: every entry under the roots
lstat'ed once, symlinks not followed, classified as captured or not.

A walk of a large workspace has to cost little more than its lstats, so what does
not change between walks is kept: each .gitignore parsed once for as long as its
stat holds, and each folder's ignore decisions for as long as the .gitignore files
above it are the same.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from .workspace.dirfd import DIR_FLAGS, is_temp_name, sweep_temp
from .workspace.listing import IgnoreStack, gitignored, load_gitignore
from .workspace.paths import relative_in_roots

if TYPE_CHECKING:
    import pathspec

Sig = tuple[int, int, int, int]
"""(size, mtime_ns, inode, mode) of an lstat: an entry whose sig holds is taken as
unchanged, as git's index does."""


@attrs.define
class Walk:
    """What one walk saw."""

    files: dict[str, Sig]
    """display path -> sig of every entry that is not a folder."""
    stat_only: set[str]
    """The files kept by stat only, never read: symlinks, fifos and the like,
    .gitignored files and files over the size cap. The rest (regular files, not
    .gitignored, within the cap) are captured."""
    folders: dict[str, str]
    """display path + "/" -> signature of the folders not walked: the ignored ones
    (their direct entries' stats, so only a change of those shows) and those that
    could not be listed. The index keeps what it knew under them as it was."""
    started_ns: int
    """time.time_ns() as the walk began: content read after it whose mtime is this
    recent may yet change within the same timestamp tick."""
    linked: set[str] = attrs.Factory(set)
    """The files with other hard links, and the ignored folders (keys) holding one:
    a write through another link changes them with no event in their own folder,
    so a watcher looks at them every pass."""


def is_executable(sig: Sig) -> bool:
    return bool(sig[3] & stat.S_IXUSR)


def is_regular(sig: Sig) -> bool:
    return stat.S_ISREG(sig[3])


def sig_of(st: os.stat_result) -> Sig:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)


class Walker:
    """Walks the roots, keeping the .gitignore caches between walks. Not thread-safe:
    one walk at a time (the index plans its passes under a lock)."""

    def __init__(self, roots: Sequence[Path], ignore: Sequence[str], max_file_bytes: int) -> None:
        real = list(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))
        # Each root's entries are shown as relative_in_roots shows them; a root nested
        # in another is walked on its own (with its own .gitignore), not twice.
        self._roots = [
            (str(r), "" if i == 0 else relative_in_roots(real, r).rstrip("/") + "/")
            for i, r in enumerate(real)
        ]
        self._root_paths = frozenset(str(r) for r in real)
        self._ignore = frozenset(ignore)
        self._max = max_file_bytes
        self._versions = itertools.count(1)
        self._specs: dict[str, tuple[Sig, int, pathspec.GitIgnoreSpec | None]] = {}
        self._decisions: dict[str, tuple[tuple[int, ...], dict[str, bool]]] = {}
        self._contexts: dict[str, _Context] = {}
        """absolute path -> where it is, of each folder the last walk (or scan) listed."""
        self.watch: Callable[[str, str], None] | None = None
        """Called with each folder's absolute path and display prefix before it is
        listed (a watcher's hook)."""
        self.watch_ignored: Callable[[str, str], None] | None = None
        """Called with each ignored folder's absolute path and display key before its
        signature is taken."""

    def walk(self) -> Walk:
        found = Walk({}, set(), {}, time.time_ns())
        self._contexts = {}
        specs_seen: dict[str, tuple[Sig, int, pathspec.GitIgnoreSpec | None]] = {}
        decisions_seen: dict[str, tuple[tuple[int, ...], dict[str, bool]]] = {}
        for root, prefix in self._roots:
            self._walk_root(root, prefix, found, specs_seen, decisions_seen)
        # Only what this walk used is kept, so deleted folders do not pile up.
        self._specs, self._decisions = specs_seen, decisions_seen
        return found

    def _walk_root(
        self,
        root: str,
        prefix: str,
        found: Walk,
        specs_seen: dict[str, tuple[Sig, int, pathspec.GitIgnoreSpec | None]],
        decisions_seen: dict[str, tuple[tuple[int, ...], dict[str, bool]]],
    ) -> None:
        base: IgnoreStack = ()
        key: tuple[int, ...] = ()
        exclude = os.path.join(root, ".git", "info", "exclude")
        try:
            spec = self._spec(exclude, sig_of(os.stat(exclude)), specs_seen)
        except OSError:
            spec = None
        if spec is not None:
            base, key = (("", spec[1]),), (spec[0],)
        self._walk_stack(root, prefix, [(root, "", base, key)], found, specs_seen, decisions_seen)

    def exclude_sigs(self) -> list[Sig | None]:
        """The stat of each root's .git/info/exclude, which a watcher does not see (it
        never watches .git's tree): a change of one calls for a walk."""
        sigs: list[Sig | None] = []
        for root, _ in self._roots:
            try:
                sigs.append(sig_of(os.stat(os.path.join(root, ".git", "info", "exclude"))))
            except OSError:
                sigs.append(None)
        return sigs

    def scan(self, parent: str, name: str, found: Walk) -> bool:
        """Walk the folder ``name`` of the walked folder ``parent`` (absolute) into
        ``found``, as a whole walk would see it: what a watcher does with a folder
        that appeared. False if ``parent`` was not walked (then only a walk knows)."""
        context = self._contexts.get(parent)
        if context is None:
            return False
        root, prefix, rel_dir, specs, key = context
        child = parent + "/" + name
        if child in self._root_paths:
            return False  # another root: walked on its own
        here = prefix + rel_dir + "/" if rel_dir else prefix
        rel_prefix = rel_dir + "/" if rel_dir else ""
        memo: dict[str, bool] = {}
        if name in self._ignore or (
            specs and _decide(memo, specs, name + "/", rel_prefix + name, True)
        ):
            shown = here + name + "/"
            if self.watch_ignored is not None:
                self.watch_ignored(child, shown)
            sig, has_link = sign_folder(child)
            if sig is not None:
                found.folders[shown] = sig
                if has_link:
                    found.linked.add(shown)
            return True
        stack = [(child, rel_prefix + name, specs, key)]
        self._walk_stack(root, prefix, stack, found, self._specs, self._decisions)
        return True

    def classify(self, parent: str, name: str, sig: Sig) -> bool | None:
        """Whether the non-folder entry ``name`` of the walked folder ``parent`` is
        kept by stat only (as :attr:`Walk.stat_only`); None if ``parent`` was not
        walked."""
        context = self._contexts.get(parent)
        if context is None:
            return None
        _, _, rel_dir, specs, _ = context
        rel = rel_dir + "/" + name if rel_dir else name
        return not (
            stat.S_ISREG(sig[3])
            and sig[0] <= self._max
            and not (specs and gitignored(specs, rel, False))
        )

    def display(self, parent: str) -> str | None:
        """The display prefix of the entries of the walked folder ``parent``."""
        context = self._contexts.get(parent)
        if context is None:
            return None
        _, prefix, rel_dir, _, _ = context
        return prefix + rel_dir + "/" if rel_dir else prefix

    def forget_folders(self, under: str) -> None:
        """Folders at or under the absolute ``under`` are gone: drop what was known."""
        cut = under + "/"
        for path in [p for p in self._contexts if p == under or p.startswith(cut)]:
            del self._contexts[path]

    def _walk_stack(
        self,
        root: str,
        prefix: str,
        stack: list[tuple[str, str, IgnoreStack, tuple[int, ...]]],
        found: Walk,
        specs_seen: dict[str, tuple[Sig, int, pathspec.GitIgnoreSpec | None]],
        decisions_seen: dict[str, tuple[tuple[int, ...], dict[str, bool]]],
    ) -> None:
        files, stat_only, folders, linked = (
            found.files,
            found.stat_only,
            found.folders,
            found.linked,
        )
        ignore, max_bytes, other_roots = self._ignore, self._max, self._root_paths - {root}
        contexts, watch, watch_ignored = self._contexts, self.watch, self.watch_ignored
        while stack:
            path, rel_dir, specs, key = stack.pop()
            here = prefix + rel_dir + "/" if rel_dir else prefix  # display prefix of entries
            if watch is not None:
                # Watched before it is listed: a change after the listing is an event.
                watch(path, here)
            try:
                # Listed through a descriptor, each entry's lstat is an fstatat of its
                # name: no walk down the whole path again per file.
                fd = os.open(path, DIR_FLAGS)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone (or no longer a folder) since its parent was listed
            except OSError as exc:
                if exc.errno != errno.ELOOP:  # ELOOP: swapped for a symlink, not followed
                    folders[here or "./"] = unlisted(exc.errno)
                continue
            try:
                try:
                    with os.scandir(fd) as listing:
                        entries = list(listing)
                except OSError as exc:
                    folders[here or "./"] = unlisted(exc.errno)
                    continue
                # A folder's own .gitignore applies to its entries, so it is read first.
                for entry in entries:
                    if entry.name == ".gitignore":
                        try:
                            where = path + "/.gitignore"
                            spec = self._spec(where, sig_of(entry.stat()), specs_seen)
                        except OSError:
                            spec = None
                        if spec is not None:
                            specs, key = (*specs, (rel_dir, spec[1])), (*key, spec[0])
                        break
                contexts[path] = (root, prefix, rel_dir, specs, key)
                memo: dict[str, bool] | None = None
                if specs:
                    cached = self._decisions.get(path)
                    if cached is None or cached[0] != key or len(cached[1]) > 2 * len(entries) + 16:
                        cached = (key, {})
                    decisions_seen[path] = cached
                    memo = cached[1]
                rel_prefix = rel_dir + "/" if rel_dir else ""
                for entry in entries:
                    name = entry.name
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if is_dir:
                        child = path + "/" + name
                        if name in ignore or (
                            memo is not None
                            and _decide(memo, specs, name + "/", rel_prefix + name, True)
                        ):
                            shown = here + name + "/"
                            if watch_ignored is not None:
                                watch_ignored(child, shown)
                            sig, has_link = sign_folder(child)
                            if sig is not None:
                                folders[shown] = sig
                                if has_link:
                                    linked.add(shown)
                        elif child not in other_roots:
                            stack.append((child, rel_prefix + name, specs, key))
                        continue
                    if is_temp_name(name):
                        # A write's temp file: never the user's. One whose writer
                        # died (a kill mid-write) is swept; a live one is its own.
                        sweep_temp(fd, name)
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # gone since the listing: as if listed a moment later
                    except OSError as exc:
                        # Listed but not searchable (no x bit): kept as it was, like a
                        # folder that cannot be listed.
                        folders[here or "./"] = unlisted(exc.errno)
                        break
                    shown = here + name
                    files[shown] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)
                    if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                        linked.add(shown)
                    if not (
                        stat.S_ISREG(st.st_mode)
                        and st.st_size <= max_bytes
                        and not (
                            memo is not None
                            and _decide(memo, specs, name, rel_prefix + name, False)
                        )
                    ):
                        stat_only.add(shown)
            finally:
                os.close(fd)

    def _spec(
        self,
        path: str,
        sig: Sig,
        seen: dict[str, tuple[Sig, int, pathspec.GitIgnoreSpec | None]],
    ) -> tuple[int, pathspec.GitIgnoreSpec] | None:
        """The parsed ignore file at ``path`` and its version, parsed again only when
        its stat changed. The version stands for the content in decision caches."""
        cached = self._specs.get(path)
        if cached is None or cached[0] != sig:
            # Stat first, then read: a write in between shows as a new stat next walk.
            cached = (sig, next(self._versions), load_gitignore(path))
        seen[path] = cached
        return None if cached[2] is None else (cached[1], cached[2])


_Context = tuple[str, str, str, IgnoreStack, tuple[int, ...]]
"""A walked folder's root, the root's display prefix, its root-relative path, and
the .gitignore specs (and their versions) that apply to its entries."""


def _decide(memo: dict[str, bool], specs: IgnoreStack, name: str, rel: str, is_dir: bool) -> bool:
    ignored = memo.get(name)
    if ignored is None:
        ignored = memo[name] = gitignored(specs, rel, is_dir)
    return ignored


def folder_signature(path: str) -> str | None:
    """What shows a change of an ignored folder's own entries: a digest of the name
    and stat of each file in it, the name and inode of each folder (whose own
    content is deep inside, and not looked at). None if the folder is gone. A
    string, so that the index's write-ahead copy (capture_log) can hold it."""
    return sign_folder(path)[0]


def sign_folder(path: str) -> tuple[str | None, bool]:
    """:func:`folder_signature`, and whether a file in the folder has another hard
    link (a write through that changes it with no event in the folder)."""
    try:
        with os.scandir(path) as listing:
            sig: list[tuple[object, ...]] = []
            linked = False
            for entry in listing:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        sig.append((entry.name, entry.inode()))
                    else:
                        st = entry.stat(follow_symlinks=False)
                        sig.append((entry.name, *sig_of(st)))
                        linked = linked or st.st_nlink > 1
                except FileNotFoundError:
                    continue
            digest = hashlib.blake2b(repr(sorted(sig)).encode(), digest_size=16).hexdigest()
            return digest, linked
    except FileNotFoundError:
        return None, False
    except OSError as exc:
        return unlisted(exc.errno), False


def unlisted(errno_: int | None) -> str:
    """The signature of a folder that could not be listed."""
    return f"unlisted {errno_}"
