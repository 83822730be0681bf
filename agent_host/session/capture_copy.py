"""Which stored copy of a :class:`~.capture.WorkspaceIndex` is the index as it is now,
and storing the next one (the copy's format is capture_saved's).

Kept apart from the pass because its state answers one question -- may
:meth:`~.capture.WorkspaceIndex.save` hand out the copy it has, or must it store
one? -- and every pass, :meth:`~.capture.WorkspaceIndex.forget` and a lapse of the
pins change the answer. A pass that stores contents stores the copy it leaves in the
same put (see capture_saved), so that a command's begin after an untouched gap
stores nothing.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .capture_diff import Entry, Plan, trusts_no_more
from .capture_plan import INLINE_PATHS, Found
from .capture_saved import SinceWhole, after_pass, encode

if TYPE_CHECKING:
    from .blobs import BlobStore


class SavedCopy:
    """The blob of the copy that is the index (None: save() stores one), and what
    changed since the last whole copy."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self._roots = roots
        self.blob: str | None = None
        """The blob of :meth:`save`'s copy (or of the one the last pass stored with
        its contents), while the index is as it was then."""
        self.racy: set[str] = set()
        """The files that copy has read again: a pass that only drops some from the
        racy set leaves the copy good (it reads more than it needs)."""
        self.forgets = 0
        """How many times :meth:`forget` was called: one during a pass makes the
        copy that pass stored not the index."""
        self._since = SinceWhole()
        """The last whole copy :meth:`save` stored, and what changed since."""

    def forget(self) -> None:
        """The engine changed a file the copy does not name as one to read again."""
        self.blob = None
        self.forgets += 1

    def lapsed(self) -> None:
        """The pins lapsed: the copy, and the whole one a delta names, may be gone."""
        self.blob = None
        self._since.base = None

    async def save(
        self,
        files: Mapping[str, Entry],
        folders: Mapping[str, str],
        racy: set[str],
        stale: set[str],
        blobs: BlobStore,
        holder: str,
    ) -> str:
        """The copy of the index ``files``, ``folders`` and ``racy | stale``: the one
        stored already while it is the index, else a new one (whole, or a delta of
        the last whole one). The caller keeps the index as it is meanwhile."""
        if self.blob is None:
            since = self._since
            roots = self._roots
            whole = since.whole_due(len(files) + len(folders))
            if whole:
                # On a worker thread: ~0.1 s for 100,000 files.
                data = await asyncio.to_thread(lambda: encode(roots, files, folders, racy | stale))
            elif since.size > INLINE_PATHS:
                data = await asyncio.to_thread(
                    lambda: since.delta(roots, files, folders, racy | stale)
                )
            else:
                data = since.delta(roots, files, folders, racy | stale)
            # Pinned as the contents are: the next command's capture_started
            # names this copy again while the index is unchanged, so gc must
            # not take it in between. A delta's base was pinned when stored.
            forgets = self.forgets
            (blob,) = await blobs.put_many([data], holder)
            if whole:
                since.stored_whole(blob)
            if self.forgets != forgets:
                # forget() while it was stored: the copy does not name that file as
                # one to read again, so it is not the index; the next save stores one.
                return blob
            self.blob = blob
            self.racy = racy | stale
        return self.blob

    def names(self, plan: Plan, entries: int) -> tuple[set[str], set[str]] | None:
        """The files and folder keys of the delta a pass that reads files stores
        with its last batch (``entries``: the index's size after it); None when it
        stores none (its copy is whole: save() stores it)."""
        if not plan.reads:
            return None
        return self._since.after(
            [*plan.removals, *plan.updates, *(item.path for item in plan.reads)],
            plan.folders_touched,
            entries,
        )

    async def next(
        self,
        names: tuple[set[str], set[str]],
        files: Mapping[str, Entry],
        folders: Mapping[str, str],
        plan: Plan,
        found: list[Found],
        racy: set[str],
        stale: frozenset[str],
    ) -> bytes | None:
        """The delta save() would store after the pass, of the index (``files`` and
        ``folders`` as it was) as the pass will leave it -- not changed yet: a pass
        that fails or is cancelled leaves it be. None when the pass leaves the copy
        that is the index good."""
        if not self._moves(plan, found, racy, stale, folders):
            return None
        read = ((item.path, None if sig is None else (sig, blob)) for item, sig, blob in found)
        after = after_pass(files, plan.removals, plan.updates, read)
        encode_delta = functools.partial(
            self._since.delta, self._roots, after, plan.folders, racy, names
        )
        if len(names[0]) + len(names[1]) > INLINE_PATHS:
            return await asyncio.to_thread(encode_delta)
        return encode_delta()

    def passed(
        self,
        plan: Plan,
        found: list[Found],
        racy: set[str],
        stale: frozenset[str],
        folders: Mapping[str, str],
        stored: str | None,
        forgets: int,
    ) -> None:
        """A pass is done (the index still ``folders`` as it was): ``stored`` is the
        copy it stored with its contents, if any, and ``forgets`` what
        :attr:`forgets` was as it began."""
        if self._moves(plan, found, racy, stale, folders):
            # What save() stored is no longer the index; this pass's copy is, unless
            # the engine forgot a file meanwhile (which the copy does not name).
            self.blob = stored if forgets == self.forgets else None
            self.racy = racy
        self._since.changed(
            [*plan.removals, *plan.updates, *(item.path for item, _, _ in found)],
            plan.folders_touched,
        )

    def _moves(
        self,
        plan: Plan,
        found: list[Found],
        racy: set[str],
        stale: frozenset[str],
        folders: Mapping[str, str],
    ) -> bool:
        """Whether the pass leaves the index other than the copy save() stored says:
        not when it read racy files again unchanged (their entries smudged in the
        copy, or now no longer), nor when the racy set shrank (a copy naming more
        files to read again misses nothing)."""
        return bool(
            plan.updates
            or plan.removals
            or stale
            or not racy <= self.racy
            or not all(
                trusts_no_more(item.old, None if sig is None else (sig, blob))
                for item, sig, blob in found
            )
            or _folders_changed(plan, folders)
        )


def _folders_changed(plan: Plan, old: Mapping[str, str]) -> bool:
    """Whether the pass changed the folders the index holds (of a watched pass,
    only those its events named can have changed)."""
    if plan.folders_touched is None:
        return plan.folders != old
    return any(plan.folders.get(key) != old.get(key) for key in plan.folders_touched)
