"""The file store's packs: many blobs' stored bytes in one file.

Two kinds, in two folders, of one format. A **batch** (``<root>/batches``) holds the
new blobs of one ``put_many`` -- one capture's, one restore's -- whole, so that the
batch costs one fsync of the pack and one of its folder, not a pair per blob. A
**pack** (``<root>/packs``) is written by gc: the versions it packs as deltas (see
blob_delta) -- a hundred bytes or so each, which as files of their own would cost a
folder entry, an inode and a whole block each -- with the whole version a chain
starts from, and what it keeps of batches once they are older than its grace
period. Loose files (``<root>/<2 hex>/``) are always whole.

A pack is written once (temp file, fsync, rename, fsync of the folder) and never
changed: gc drops entries by writing a new pack with those it keeps and only then
unlinking the old one, and merges small packs as :data:`GROWTH` says. At every
instant each kept blob is in a whole pack or a loose file, so a reader never misses
one: it looks for the loose file first, then in the packs and batches it knows, and
when a blob is in none (or a pack it knew is gone) it lists the folder again and
looks once more.

Layout: :data:`MAGIC`; the stored bytes of each entry, one after another; an index
of 80 bytes an entry (id, base id or zeros, offset, length); and a trailer of
the entry count, the index's offset and :data:`MAGIC`. A pack whose trailer or
index does not add up is skipped with a warning and never rewritten or removed:
its blobs read as missing (a typed error), and nothing is lost that could be saved.
"""

from __future__ import annotations

import logging
import os
import secrets
import struct
import threading
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path

from .durable import fsync_dir

log = logging.getLogger(__name__)

MAGIC = b"AHPACK1\n"
GROWTH = 2
"""Packs are kept in a geometric progression of sizes: each at least this many times
all the smaller ones together; the next gc merges the small ones that break it
(as git's ``repack --geometric``). So a gc adds a pack, yet there are at most about
log2(bytes) of them, and a byte is rewritten about that many times in its life, not
once per gc."""
DEAD_SHARE = 0.25
"""A pack is written anew without its dead entries once they are this share of its
bytes: the space they hold is bounded so, and the work of dropping them is paid
once per that much garbage, not once per gc."""
_ENTRY = struct.Struct(">32s32sQQ")
_TRAILER = struct.Struct(">QQ8s")
_NO_BASE = bytes(32)
TEMP_PREFIX = ".tmp-"

Entry = tuple[str, int, int, str | None]
"""pack file name, offset, length, base id (None: a whole form)."""


class Packs:
    """The packs in ``folder``, with an index of them kept in memory and read again
    when a lookup misses.

    A blob may be in several packs (a crash between gc's steps, a content put
    again, a whole version gc later stored as a delta): it is read from its delta
    entry if it has one (gc chose it, and a delta's base is kept with it), else
    from any. The others are dead weight their pack is rewritten without."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._mutex = threading.Lock()
        self._known: frozenset[str] = frozenset()
        self._by_pack: dict[str, dict[str, Entry]] = {}
        self._entries: dict[str, Entry] = {}

    def refresh(self) -> None:
        """Read the index of any pack not read yet; forget those gone."""
        try:
            names = frozenset(
                e.name
                for e in os.scandir(self.folder)
                if e.name.endswith(".pack") and not e.name.startswith(TEMP_PREFIX)
            )
        except FileNotFoundError:
            names = frozenset()
        with self._mutex:
            if names == self._known:
                return
            added = {n: _read_index(self.folder / n) for n in sorted(names - self._known)}
            self._update(names, added)

    def _update(self, names: frozenset[str], added: Mapping[str, dict[str, Entry]]) -> None:
        """Know the packs ``names``, those in ``added`` with their entries (under
        the mutex)."""
        gone = self._known - names
        if gone:
            # The blobs of a pack gone (merged, rewritten, retired) are read from
            # another pack that holds them, if any.
            by_pack = {n: e for n, e in self._by_pack.items() if n in names}
            by_pack.update(added)
            entries: dict[str, Entry] = {}
            for held in by_pack.values():
                _resolve(entries, held)
            self._by_pack, self._entries = by_pack, entries
        else:
            # In place: a batch a command is added in the time of its own entries,
            # not of every blob the store holds. (Lookups need no lock; whatever
            # walks these dicts takes the mutex.)
            self._by_pack.update(added)
            for held in added.values():
                _resolve(self._entries, held)
        self._known = names

    def stored(self, blob: str, refresh: bool = True) -> bytes | None:
        """The stored bytes of ``blob`` from a pack; None if no pack holds it
        (``refresh``: list the folder again first if none known does)."""
        refreshed = not refresh
        for _ in range(3):  # a pack rewritten under us: listed again, read again
            entry = self._entries.get(blob)
            if entry is None and not refreshed:
                self.refresh()
                refreshed = True
                continue
            if entry is None:
                return None
            name, offset, length, _ = entry
            try:
                with open(self.folder / name, "rb") as f:
                    f.seek(offset)
                    data = f.read(length)
                return data if len(data) == length else None
            except FileNotFoundError:  # merged, rewritten or retired meanwhile
                self.refresh()
                refreshed = True
        return None

    def has(self, blob: str, refresh: bool = True) -> bool:
        """Whether a pack holds ``blob`` (``refresh``: list the folder again first
        if none known does; gc, which alone writes packs, need not)."""
        if refresh and blob not in self._entries:
            self.refresh()
        return blob in self._entries

    def pack_of(self, blob: str) -> str | None:
        """The pack ``blob`` is read from, as last known (no listing)."""
        entry = self._entries.get(blob)
        return None if entry is None else entry[0]

    def held_by(self, names: Iterable[str]) -> set[str]:
        """Every blob the packs ``names`` hold (whichever pack each is read from)."""
        with self._mutex:
            return {b for n in names for b in self._by_pack.get(n, {})}

    def ids(self) -> set[str]:
        with self._mutex:
            return set(self._entries)

    def entries(self) -> dict[str, Entry]:
        """blob -> the entry it is read from (one, when several packs hold it)."""
        with self._mutex:
            return dict(self._entries)

    def contents(self, name: str) -> dict[str, tuple[int, int]]:
        """Every entry of the pack ``name``: blob -> (offset, length)."""
        return {b: (e[1], e[2]) for b, e in _read_index(self.folder / name).items()}

    def read_at(self, name: str, offset: int, length: int) -> bytes | None:
        """``length`` bytes at ``offset`` of the pack ``name``; None if it is gone."""
        try:
            with open(self.folder / name, "rb") as f:
                f.seek(offset)
                data = f.read(length)
        except FileNotFoundError:
            return None
        return data if len(data) == length else None

    def remove(self, names: Iterable[str]) -> None:
        """Unlink the packs ``names`` (what they hold is elsewhere by now), durably."""
        for name in names:
            with suppress(FileNotFoundError):
                os.unlink(self.folder / name)
        fsync_dir(self.folder)
        self.refresh()

    def bases(self) -> dict[str, str]:
        """blob -> base, for the packed blobs stored as deltas."""
        with self._mutex:
            return {b: e[3] for b, e in self._entries.items() if e[3] is not None}

    def names(self) -> frozenset[str]:
        return self._known

    def write(self, items: Mapping[str, tuple[bytes, str | None]]) -> str | None:
        """A new pack durably holding ``items`` (id -> stored bytes, base or None);
        its name (None if there were none)."""
        if not items:
            return None
        name = f"{secrets.token_hex(12)}.pack"
        folder = str(self.folder)
        tmp = os.path.join(folder, f"{TEMP_PREFIX}{name}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o600)
        except FileNotFoundError:  # the first pack: its folder too
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, flags, 0o600)
        written: dict[str, Entry] = {}
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC)
                index = []
                offset = len(MAGIC)
                for blob, (stored, base) in items.items():
                    f.write(stored)
                    base_bytes = bytes.fromhex(base) if base else _NO_BASE
                    index.append(_ENTRY.pack(bytes.fromhex(blob), base_bytes, offset, len(stored)))
                    written[blob] = (name, offset, len(stored), base or None)
                    offset += len(stored)
                f.write(b"".join(index))
                f.write(_TRAILER.pack(len(index), offset, MAGIC))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, os.path.join(folder, name))
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        fsync_dir(self.folder)
        self._add(name, written)
        return name

    def _add(self, name: str, written: dict[str, Entry]) -> None:
        """Know the pack ``name`` just written, holding ``written``, without listing
        the folder: a process writing a batch a command keeps no more than a glance
        at what it wrote."""
        with self._mutex:
            if name not in self._known:
                self._update(self._known | {name}, {name: written})

    def stale(self, keep: set[str]) -> set[str]:
        """The packs worth writing anew: those whose entries not in ``keep`` are
        :data:`DEAD_SHARE` of their bytes or more, and the small ones to merge (see
        :func:`to_merge`). The others keep their dead entries for now (so a large
        pack is not rewritten whole for a few), and gc keeps what those need."""
        self.refresh()
        size: dict[str, int] = {}
        dead: dict[str, int] = {}
        with self._mutex:
            for name, held in self._by_pack.items():
                size[name] = dead[name] = 0
                for blob, entry in held.items():
                    length = entry[2]
                    size[name] += length
                    if blob not in keep or self._entries.get(blob) is not entry:
                        dead[name] += length  # not kept, or read from another pack
        # A pack whose index cannot be read holds nothing here, and is left alone
        # (see the module).
        rewrite = {n for n, d in dead.items() if size[n] and d >= DEAD_SHARE * size[n]}
        return rewrite | to_merge({n: s for n, s in size.items() if s})

    def ids_outside(self, names: set[str]) -> set[str]:
        """The blobs held by packs other than ``names``."""
        with self._mutex:
            return {b for b, e in self._entries.items() if e[0] not in names}

    def rewrite(self, stale: set[str], keep: set[str]) -> tuple[int, int]:
        """Write the entries of the ``stale`` packs that are in ``keep`` to a new
        pack, then unlink those packs. The number of entries dropped and the bytes
        freed."""
        by_pack: dict[str, list[str]] = {name: [] for name in stale}
        with self._mutex:
            for blob, entry in self._entries.items():
                if entry[0] in by_pack:
                    by_pack[entry[0]].append(blob)
        if not stale:
            return 0, 0
        kept: dict[str, tuple[bytes, str | None]] = {}
        dropped = freed = 0
        for name in sorted(stale):
            for blob in by_pack[name]:
                _, _, length, base = self._entries[blob]
                if blob not in keep:
                    dropped += 1
                    freed += length
                    continue
                stored = self.stored(blob)
                if stored is None:  # its pack vanished: only another gc does that
                    raise FileNotFoundError(f"pack {name} went away during gc")
                kept[blob] = (stored, base)
        self.write(kept)
        self.remove(stale)
        return dropped, freed

    def sweep_temps(self, cutoff: float) -> int:
        """Remove temp files a crash left, older than ``cutoff``."""
        removed = 0
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return 0
        for entry in entries:
            if entry.name.startswith(TEMP_PREFIX) and entry.stat().st_mtime < cutoff:
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed += 1
        return removed


def _read_index(path: Path) -> dict[str, Entry]:
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size < len(MAGIC) + _TRAILER.size:
                raise ValueError("shorter than a pack's header and trailer")
            f.seek(size - _TRAILER.size)
            count, at, magic = _TRAILER.unpack(f.read(_TRAILER.size))
            if magic != MAGIC or at + count * _ENTRY.size + _TRAILER.size != size:
                raise ValueError("its trailer does not match its size")
            f.seek(at)
            raw = f.read(count * _ENTRY.size)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, struct.error) as exc:
        log.warning("%s: pack skipped, its blobs read as missing (%s)", path, exc)
        return {}
    entries: dict[str, Entry] = {}
    for blob, base, offset, length in _ENTRY.iter_unpack(raw):
        if offset < len(MAGIC) or offset + length > at:
            log.warning("%s: pack skipped: an entry lies outside its data", path)
            return {}
        entries[blob.hex()] = (path.name, offset, length, None if base == _NO_BASE else base.hex())
    return entries


def _resolve(entries: dict[str, Entry], held: Mapping[str, Entry]) -> None:
    """Add the entries of one pack, ``held``, to the blobs' ``entries``: a delta entry
    wins over a whole one."""
    for blob, entry in held.items():
        current = entries.get(blob)
        if current is None or (current[3] is None and entry[3] is not None):
            entries[blob] = entry


def to_merge(size: Mapping[str, int]) -> set[str]:
    """Of packs of ``size`` (name -> bytes), the smallest ones to merge into one so
    that, with it, each pack is at least :data:`GROWTH` times all smaller ones."""
    ordered = sorted(size.items(), key=lambda item: (item[1], item[0]))
    below = 0
    cut = 0
    for i, (_, bytes_) in enumerate(ordered):
        if i and bytes_ < GROWTH * below:
            cut = i + 1
        below += bytes_
    return {name for name, _ in ordered[:cut]} if cut >= 2 else set()


def loose_paths(root: Path, blobs: Iterable[str]) -> list[Path]:
    return [root / b[:2] / b[2:] for b in blobs]
