"""The copy of a workspace index that a CaptureStarted event names: what a capture
needs to finish in another process (see capture_log).

A copy is whole (every file and folder the index holds), or a delta: what changed
since a whole copy, which it names. A whole copy of a 100,000-file index is ~10 MB
and took ~270 ms to encode and store on every command; a delta costs what the
commands since changed. See :meth:`~.capture.WorkspaceIndex.save` for when a whole
copy is written again.

A pass that changes the index stores the delta it leaves with the contents it
stores (:class:`Overlay` is the index as it will be, before it is changed), so that
the next save() -- before a command, when nothing changed since the last one's
changes() -- stores nothing."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import orjson

from .capture_diff import Entry

if TYPE_CHECKING:
    from .blobs import BlobStore

SAVED_VERSION = 1
"""Of the whole copy :func:`encode` makes."""
DELTA_VERSION = 2
"""Of the delta :func:`encode_delta` makes."""


@attrs.frozen
class SavedIndex:
    """What :func:`decode` read back."""

    roots: list[Path]
    files: dict[str, Entry]
    folders: dict[str, str]
    racy: set[str]
    """Files to read again whatever their stat (racy, or changed by the engine)."""


@attrs.frozen
class SavedDelta:
    """What :func:`decode` read back of a delta: the changes since the whole copy
    ``base``, None for a file or folder that is gone."""

    base: str
    roots: list[Path]
    files: dict[str, Entry | None]
    folders: dict[str, str | None]
    racy: set[str]
    """The whole set as it was at this copy (it replaces the base's)."""


def encode(
    roots: Sequence[Path],
    files: Mapping[str, Entry],
    folders: Mapping[str, str],
    racy: set[str],
) -> bytes:
    return orjson.dumps(
        {
            "v": SAVED_VERSION,
            "roots": [str(r) for r in roots],
            "files": {p: [*sig, blob] for p, (sig, blob) in files.items()},
            "folders": folders,
            "racy": sorted(racy),
        }
    )


def encode_delta(
    base: str,
    roots: Sequence[Path],
    files: Mapping[str, Entry | None],
    folders: Mapping[str, str | None],
    racy: set[str],
) -> bytes:
    return orjson.dumps(
        {
            "v": DELTA_VERSION,
            "base": base,
            "roots": [str(r) for r in roots],
            "files": {p: None if e is None else [*e[0], e[1]] for p, e in files.items()},
            "folders": folders,
            "racy": sorted(racy),
        }
    )


def decode(data: bytes) -> SavedIndex | SavedDelta:
    """The copy :func:`encode` or :func:`encode_delta` made (ValueError if ``data``
    is neither)."""
    try:
        copy = orjson.loads(data)
        if not isinstance(copy, dict):
            raise ValueError("not a saved workspace index")
        if copy.get("v") == DELTA_VERSION:
            base = copy["base"]
            if not isinstance(base, str):
                raise ValueError(f"a delta whose base is {base!r}")
            return SavedDelta(
                base,
                [Path(r) for r in copy["roots"]],
                {
                    p: None if e is None else ((e[0], e[1], e[2], e[3]), e[4])
                    for p, e in copy["files"].items()
                },
                dict(copy["folders"]),
                set(copy["racy"]),
            )
        if copy.get("v") != SAVED_VERSION:
            raise ValueError(f"a saved index of version {copy.get('v')!r}")
        return SavedIndex(
            [Path(r) for r in copy["roots"]],
            {
                p: ((size, mtime, ino, mode), blob)
                for p, (size, mtime, ino, mode, blob) in copy["files"].items()
            },
            dict(copy["folders"]),
            set(copy["racy"]),
        )
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"not a saved workspace index: {exc}") from exc


def apply(base: SavedIndex, delta: SavedDelta) -> SavedIndex:
    """The index ``delta`` saved, from the whole copy it names (ValueError if the
    two are of different roots)."""
    if base.roots != delta.roots:
        raise ValueError(f"a delta of roots {delta.roots} on a copy of {base.roots}")
    files, folders = base.files, base.folders  # decoded for this apply: ours to change
    for path, entry in delta.files.items():
        if entry is None:
            files.pop(path, None)
        else:
            files[path] = entry
    for key, signed in delta.folders.items():
        if signed is None:
            folders.pop(key, None)
        else:
            folders[key] = signed
    return SavedIndex(base.roots, files, folders, delta.racy)


async def read_saved(blob: str, blobs: BlobStore) -> SavedIndex:
    """The index stored as ``blob``, a delta read with its whole copy. BlobNotFound or
    BlobCorrupt if either cannot be read, ValueError if it is not a saved index."""
    copy = await asyncio.to_thread(decode, await blobs.get(blob))
    if isinstance(copy, SavedIndex):
        return copy
    base = await asyncio.to_thread(decode, await blobs.get(copy.base))
    if not isinstance(base, SavedIndex):
        raise ValueError(f"the delta {blob} names another delta, {copy.base}")
    return apply(base, copy)


def rebase_at(entries: int) -> int:
    """How many files and folders a delta may name before the next copy is whole
    again. A whole copy costs about ``entries``, a delta what changed since the last
    whole one: for commands of ``k`` changes, a whole copy every ``m`` commands costs
    per command ``entries/m + k*m/2``, least at ``m = sqrt(2 * entries / k)``, when
    the delta names ``k*m = sqrt(2 * k * entries)`` -- for 10-file commands,
    ``sqrt(20 * entries)`` (1,414 of 100,000)."""
    return max(256, math.isqrt(20 * entries))


class SinceWhole:
    """The last whole copy a workspace index stored, and what its passes changed
    since: the files and folder keys the next delta names."""

    def __init__(self) -> None:
        self.base: str | None = None
        """None: the next copy is whole."""
        self.files: set[str] = set()
        self.folders: set[str] = set()

    def changed(self, files: Iterable[str], folders: set[str] | None) -> None:
        """A pass changed ``files`` and ``folders`` (None: it walked, and any may
        have changed: the next copy is whole)."""
        if self.base is None:
            return
        if folders is None:
            self.base = None
            return
        self.files.update(files)
        self.folders.update(folders)

    @property
    def size(self) -> int:
        return len(self.files) + len(self.folders)

    def whole_due(self, entries: int) -> bool:
        return self.base is None or self.size > rebase_at(entries)

    def after(
        self, files: Iterable[str], folders: set[str] | None, entries: int
    ) -> tuple[set[str], set[str]] | None:
        """The files and folder keys the next delta names once a pass changed
        ``files`` and ``folders`` (as :meth:`changed` takes them); None when the
        copy after that pass is whole."""
        if self.base is None or folders is None:
            return None
        names = self.files.union(files), self.folders | folders
        if len(names[0]) + len(names[1]) > rebase_at(entries):
            return None
        return names

    def delta(
        self,
        roots: Sequence[Path],
        files: Mapping[str, Entry],
        folders: Mapping[str, str],
        racy: set[str],
        names: tuple[set[str], set[str]] | None = None,
    ) -> bytes:
        """The delta of the index ``files``, ``folders`` and ``racy`` on the last
        whole copy: of the paths changed since (or ``names``, of :meth:`after`)."""
        assert self.base is not None
        paths, keys = names or (self.files, self.folders)
        return encode_delta(
            self.base,
            roots,
            {path: files.get(path) for path in paths},
            {key: folders.get(key) for key in keys},
            racy,
        )

    def stored_whole(self, blob: str) -> None:
        self.base = blob
        self.files.clear()
        self.folders.clear()


class Overlay(Mapping[str, Entry]):
    """``base`` with ``changes`` laid over it (None: the file is gone), not copied:
    the files of an index as a pass will leave them, before the pass changes them."""

    def __init__(self, base: Mapping[str, Entry], changes: Mapping[str, Entry | None]) -> None:
        self._base = base
        self._changes = changes

    def __getitem__(self, path: str) -> Entry:
        if path in self._changes:
            entry = self._changes[path]
            if entry is None:
                raise KeyError(path)
            return entry
        return self._base[path]

    def __iter__(self) -> Iterator[str]:
        changes = self._changes
        yield from (path for path in self._base if path not in changes)
        yield from (path for path, entry in changes.items() if entry is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def after_pass(
    files: Mapping[str, Entry],
    removals: Iterable[str],
    updates: Mapping[str, Entry],
    read: Iterable[tuple[str, Entry | None]],
) -> Overlay:
    """``files`` as a pass leaves them that removes ``removals``, then sets
    ``updates``, then what it ``read`` (None: the file is gone)."""
    after: dict[str, Entry | None] = dict.fromkeys(removals)
    after.update(updates)
    after.update(read)
    return Overlay(files, after)
