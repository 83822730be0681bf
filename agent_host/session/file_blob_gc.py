"""gc of the file blob store with its packs (see blob_packs and blob_delta).

One collection, holding ``<root>.gc.lock`` (so two, in any processes, take turns:
neither can drop a base the other just made a delta of, nor pack a version the
other is dropping), in this order, each step leaving every kept blob readable:

1. The blobs to keep -- those referenced, pinned or (for loose files) touched
   within the grace period -- closed over the bases of the packed deltas among
   them; the loose scan (``FileBlobStore._gc``) then removes the loose files not
   kept, so no base a kept delta needs is ever removed.
2. Packs whose entries not kept are a quarter of their bytes (or all packs, when
   there are too many) are written anew without those, then unlinked; the others
   keep their dead entries, and step 1 kept what those need.
3. The new pairs' versions are packed: a new pack, durable before anything else
   changes, with each delta and the whole version its chain starts from.
4. Loose files of packed blobs are removed once untouched for the grace period (a
   put that found the loose file relies on it being kept as long as the grace
   period says), and prefix folders left empty are removed.

A crash anywhere leaves at worst a blob both loose and packed, or in two packs
(read from either; the next collection tidies it), or a temp file the next
collection sweeps.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Set
from contextlib import suppress
from typing import TYPE_CHECKING

from . import blob_codec, blob_delta
from .blob_packs import Packs
from .store.locking import hold

if TYPE_CHECKING:
    from .blobs import FileBlobStore, GcResult

LOCK_TIMEOUT = 3600.0
"""How long a collection waits for another to finish before it gives up (StoreBusy)."""


def collect_and_pack(
    store: FileBlobStore,
    packs: Packs,
    referenced: Set[str],
    grace_seconds: float,
    pairs: list[tuple[str, str]],
) -> GcResult:
    from .blobs import GcResult

    lock = store.root.with_name(f"{store.root.name}.gc.lock")
    if not store.root.is_dir():
        return GcResult(0, 0, 0)
    with hold(str(lock), timeout=LOCK_TIMEOUT):
        cutoff = time.time() - grace_seconds
        packs.refresh()
        bases = packs.bases()
        keep = blob_delta.close_over_bases(set(referenced) | store._pins.live(), bases)
        stale = packs.stale(keep)
        # Entries of packs left as they are still read back: what they need stays.
        keep = blob_delta.close_over_bases(keep | packs.ids_outside(stale), bases)
        loose = store._gc(keep, grace_seconds)
        dropped, freed = packs.rewrite(stale, keep)
        packs.sweep_temps(cutoff)
        _pack(store, packs, keep, pairs)
        copies = _remove_loose_copies(store, packs, cutoff)
        return GcResult(
            loose.removed + dropped,
            loose.kept + len(packs.ids()) - copies,
            loose.freed_bytes + freed,
        )


def _pack(store: FileBlobStore, packs: Packs, keep: set[str], pairs: list[tuple[str, str]]) -> None:
    """Pack the ``after`` of each pair (both kept, ``after`` loose and no other
    version's base) as a delta of ``before``, with ``before`` itself when it is a
    loose whole version."""
    if not pairs:
        return
    packer = blob_delta.Packer(store._stored, packs.bases(), store.root)
    items: dict[str, tuple[bytes, str | None]] = {}
    for before, after in pairs:
        if before not in keep or after not in keep:
            continue
        if after in items or packs.has(after, refresh=False):
            continue  # packed already: a packed entry is never rewritten while kept
        delta = packer.delta(before, after)
        if delta is None:
            continue
        items[after] = (delta, before)
        if before not in items and not packs.has(before, refresh=False):
            whole = _loose(store, before)
            if whole is not None and blob_codec.delta_base(before, whole) is None:
                items[before] = (whole, None)
    packs.write(items)


def _loose(store: FileBlobStore, blob: str) -> bytes | None:
    try:
        return store._path(blob).read_bytes()
    except FileNotFoundError:
        return None


def _remove_loose_copies(store: FileBlobStore, packs: Packs, cutoff: float) -> int:
    """Remove the loose files of packed blobs untouched since ``cutoff``, and the
    prefix folders that leaves empty; how many packed blobs still had a loose file
    before (each counted once in the result)."""
    copies = 0
    emptied: set[str] = set()
    for blob in packs.ids():
        path = store._path(blob)
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        copies += 1
        if stat.st_mtime < cutoff:
            with suppress(FileNotFoundError):
                path.unlink()
                emptied.add(blob[:2])
    for prefix in emptied:
        try:
            os.rmdir(store.root / prefix)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                raise
    return copies
