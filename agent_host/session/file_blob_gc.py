"""gc of the file blob store with its packs and batches (see blob_packs, blob_delta).

One collection, holding ``<root>.gc.lock`` (so two, in any processes, take turns:
neither can drop a base the other just made a delta of, nor pack a version the
other is dropping), in this order, each step leaving every kept blob readable:

1. The blobs to keep -- those referenced, pinned or (for loose files and batches)
   written or touched within the grace period -- closed over the bases of the
   packed deltas among them; the loose scan (``FileBlobStore._gc``) then removes
   the loose files not kept, so no base a kept delta needs is ever removed.
2. Packs whose entries not kept are a quarter of their bytes, and the small packs
   to merge (see blob_packs.GROWTH), are written anew without those, then
   unlinked; the others keep their dead entries, and step 1 kept what those need.
3. The new pairs' versions are packed: a new pack, durable before anything else
   changes, with each delta and the whole version its chain starts from.
4. Batches older than the grace period: what they hold that is kept and in no
   pack or loose file is written to a new pack, then they are unlinked. (A put
   that found content relies on it for the grace period; a batch younger than
   that is kept whole, so what a capture stored before its event was logged stays.)
5. Loose files of packed blobs are removed once untouched for the grace period,
   and prefix folders left empty are removed.

A crash anywhere leaves at worst a blob both loose and packed, or in two packs or
a pack and a batch (read from either; the next collection tidies it), or a temp
file the next collection sweeps.
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
    batches: Packs,
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
        batches.refresh()
        old, young = _batches_by_age(batches, cutoff)
        bases = packs.bases()
        keep = blob_delta.close_over_bases(set(referenced) | store._pins.live(), bases)
        stale = packs.stale(keep)
        # Entries of packs left as they are still read back: what they need stays.
        keep = blob_delta.close_over_bases(keep | packs.ids_outside(stale), bases)
        seen_loose: set[str] = set()
        loose = store._gc(keep, grace_seconds, seen_loose)
        dropped, freed = packs.rewrite(stale, keep)
        swept = packs.sweep_temps(cutoff) + batches.sweep_temps(cutoff)
        _pack(store, packs, keep, pairs)
        in_young = batches.held_by(young)
        batch_dropped, batch_freed = _retire_batches(
            store, packs, batches, old, keep, seen_loose, in_young, cutoff
        )
        copies = _remove_loose_copies(store, packs, cutoff, seen_loose)
        return GcResult(
            loose.removed + dropped + batch_dropped + swept,
            loose.kept + len(packs.ids() | in_young) - copies,
            loose.freed_bytes + freed + batch_freed,
        )


def _batches_by_age(batches: Packs, cutoff: float) -> tuple[list[str], set[str]]:
    """The batches written before ``cutoff`` (oldest first), and the others."""
    old: list[tuple[float, str]] = []
    young: set[str] = set()
    for name in batches.names():
        try:
            mtime = os.stat(batches.folder / name).st_mtime
        except FileNotFoundError:
            continue
        if mtime < cutoff:
            old.append((mtime, name))
        else:
            young.add(name)
    return [name for _, name in sorted(old)], young


def _retire_batches(
    store: FileBlobStore,
    packs: Packs,
    batches: Packs,
    old: list[str],
    keep: set[str],
    loose: set[str],
    young: set[str],
    cutoff: float,
) -> tuple[int, int]:
    """Move what the ``old`` batches hold that is kept, and in no pack or loose file,
    to one new pack; then unlink them, but for any a put touched meanwhile (it
    relies on what that holds: it stays whole, as young). How many blobs went (not
    kept, and in no ``young`` batch, loose file or pack) and the bytes they held."""
    if not old:
        return 0, 0
    items: dict[str, tuple[bytes, str | None]] = {}
    held = {name: batches.contents(name) for name in old}
    for name, contents in held.items():
        for blob, (offset, length) in contents.items():
            if blob not in keep or blob in items or blob in loose:
                continue
            if packs.has(blob, refresh=False):
                continue
            stored = batches.read_at(name, offset, length)
            if stored is None:  # only another gc removes a batch, and we hold the lock
                raise FileNotFoundError(f"batch {name} went away during gc")
            items[blob] = (stored, None)
    packs.write(items)
    # A batch whose index cannot be read held nothing we could copy: it is left
    # alone, as a damaged pack is (see blob_packs).
    retired = [n for n in old if held[n] and not _touched_since(batches, n, cutoff)]
    batches.remove(retired)
    elsewhere = young | loose | packs.ids() | {b for n in old if n not in retired for b in held[n]}
    dropped: dict[str, int] = {}
    for name in retired:
        for blob, (_, length) in held[name].items():
            if blob not in keep and blob not in elsewhere:
                dropped.setdefault(blob, length)
    return len(dropped), sum(dropped.values())


def _touched_since(batches: Packs, name: str, cutoff: float) -> bool:
    try:
        return os.stat(batches.folder / name).st_mtime >= cutoff
    except FileNotFoundError:
        return False


def _pack(store: FileBlobStore, packs: Packs, keep: set[str], pairs: list[tuple[str, str]]) -> None:
    """Pack the ``after`` of each pair (both kept, ``after`` whole and no other
    version's base) as a delta of ``before``, with ``before`` itself when it is a
    whole version in no pack (a loose file, a batch)."""
    if not pairs:
        return
    packer = blob_delta.Packer(store._stored, packs.bases(), store.root)
    items: dict[str, tuple[bytes, str | None]] = {}
    for before, after in pairs:
        if before not in keep or after not in keep:
            continue
        if after in items:
            continue
        # A whole version packed already (a batch gc retired before its event was
        # read) may still become a delta: the new entry is read from then on, and
        # the whole one is dead weight its pack is rewritten without.
        delta = packer.delta(before, after)
        if delta is None:
            continue
        items[after] = (delta, before)
        if before not in items and not packs.has(before, refresh=False):
            # Loose, or in a batch: both are whole (a gc pack alone holds deltas).
            whole = store._stored(before)
            if whole is not None and blob_codec.delta_base(before, whole) is None:
                items[before] = (whole, None)
    packs.write(items)


def _remove_loose_copies(store: FileBlobStore, packs: Packs, cutoff: float, loose: set[str]) -> int:
    """Remove the loose files of packed blobs untouched since ``cutoff``, and the
    prefix folders that leaves empty; how many packed blobs still had a loose file
    before (each counted once in the result). ``loose``: the blobs the loose scan
    kept (so only those are looked at, not every packed blob)."""
    copies = 0
    emptied: set[str] = set()
    for blob in packs.ids() & loose:
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
