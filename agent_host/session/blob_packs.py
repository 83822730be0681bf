"""The file store's packs: many blobs' stored bytes in one file, written by gc.

A blob made a delta (see blob_delta) is a hundred bytes or so; as a file of its own
in ``<root>/<2 hex>/`` it would cost a folder entry, an inode and, on most
filesystems, a whole block -- more than the delta saves. gc therefore moves the
versions it packs (each delta, and the whole version a chain starts from) into a
pack ``<root>/packs/<random>.pack``, and removes their loose files once no put may
still be relying on them (untouched for gc's grace period). Loose files are always
whole, so the loose layout and its scan stay as they were.

A pack is written once (temp file, fsync, rename, fsync of the folder) and never
changed: gc drops entries by writing a new pack with those it keeps and only then
unlinking the old one, and merges packs when there are more than
:data:`MERGE_AT`. At every instant each kept blob is in a whole pack or a loose
file, so a reader never misses one: it looks for the loose file first, then in the
packs it knows, and when a blob is in neither (or a pack it knew is gone) it lists
the folder again and looks once more.

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
MERGE_AT = 16
"""More packs than this are merged into one by the next gc."""
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
    when a lookup misses."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._mutex = threading.Lock()
        self._known: frozenset[str] = frozenset()
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
            # A pack gone (merged, rewritten): read them all again, as a blob it held
            # may also be in an older pack a crash left behind.
            gone = bool(self._known - names)
            entries = {} if gone else dict(self._entries)
            for name in sorted(names if gone else names - self._known):
                for blob, entry in _read_index(self.folder / name).items():
                    entries.setdefault(blob, entry)
            self._entries, self._known = entries, names

    def stored(self, blob: str) -> bytes | None:
        """The stored bytes of ``blob`` from a pack; None if no pack holds it."""
        refreshed = False
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
            except FileNotFoundError:  # merged or rewritten meanwhile
                self.refresh()
                refreshed = True
        return None

    def has(self, blob: str, refresh: bool = True) -> bool:
        """Whether a pack holds ``blob`` (``refresh``: list the folder again first
        if none known does; gc, which alone writes packs, need not)."""
        if refresh and blob not in self._entries:
            self.refresh()
        return blob in self._entries

    def ids(self) -> set[str]:
        return set(self._entries)

    def bases(self) -> dict[str, str]:
        """blob -> base, for the packed blobs stored as deltas."""
        return {b: e[3] for b, e in self._entries.items() if e[3] is not None}

    def names(self) -> frozenset[str]:
        return self._known

    def write(self, items: Mapping[str, tuple[bytes, str | None]]) -> str | None:
        """A new pack durably holding ``items`` (id -> stored bytes, base or None);
        its name (None if there were none)."""
        if not items:
            return None
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{secrets.token_hex(12)}.pack"
        tmp = self.folder / f"{TEMP_PREFIX}{name}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC)
                index = []
                offset = len(MAGIC)
                for blob, (stored, base) in items.items():
                    f.write(stored)
                    base_bytes = bytes.fromhex(base) if base else _NO_BASE
                    index.append(_ENTRY.pack(bytes.fromhex(blob), base_bytes, offset, len(stored)))
                    offset += len(stored)
                f.write(b"".join(index))
                f.write(_TRAILER.pack(len(index), offset, MAGIC))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.folder / name)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        fsync_dir(self.folder)
        self.refresh()
        return name

    def stale(self, keep: set[str]) -> set[str]:
        """The packs worth writing anew: those whose entries not in ``keep`` are
        :data:`DEAD_SHARE` of their bytes or more, every pack when there are more
        than :data:`MERGE_AT`. The others keep their dead entries for now (so a
        large pack is not rewritten whole for a few), and gc keeps what those
        need."""
        self.refresh()
        size: dict[str, int] = {}
        dead: dict[str, int] = {}
        for blob, (name, _, length, _) in self._entries.items():
            size[name] = size.get(name, 0) + length
            if blob not in keep:
                dead[name] = dead.get(name, 0) + length
        if len(size) > MERGE_AT:
            return set(size)
        return {n for n, d in dead.items() if d >= DEAD_SHARE * size[n]}

    def ids_outside(self, names: set[str]) -> set[str]:
        """The blobs held by packs other than ``names``."""
        return {b for b, e in self._entries.items() if e[0] not in names}

    def rewrite(self, stale: set[str], keep: set[str]) -> tuple[int, int]:
        """Write the entries of the ``stale`` packs that are in ``keep`` to a new
        pack, then unlink those packs. The number of entries dropped and the bytes
        freed."""
        by_pack: dict[str, list[str]] = {name: [] for name in stale}
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
        for name in stale:
            with suppress(FileNotFoundError):
                os.unlink(self.folder / name)
        fsync_dir(self.folder)
        self.refresh()
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


def loose_paths(root: Path, blobs: Iterable[str]) -> list[Path]:
    return [root / b[:2] / b[2:] for b in blobs]
