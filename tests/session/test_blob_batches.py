"""The file blob store's batches and its gc (blob_packs, file_blob_gc): a put_many of
several new blobs writes one batch pack, content a batch holds is not written
again; gc keeps young batches whole and retires old ones into its packs (what is
kept, read from there by any reader), spares a batch a put touched, may later make
a retired whole version a delta, merges packs geometrically, and leaves a pack
whose trailer is damaged alone."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.session import BlobNotFound, blob_codec, collect_garbage, file_blob_gc, open_store
from agent_host.session.blob_packs import GROWTH, _read_index, to_merge
from agent_host.session.blobs import FileBlobStore, blob_id
from agent_host.session.events import FileSnapshot
from agent_host.session.store.conformance_deltas import file_versions

DATAS = [b"".join(b"file %d line %d\n" % (f, n) for n in range(200)) for f in range(10)]
IDS = [blob_id(d) for d in DATAS]
HOUR = 3600.0


def batches(root: Path) -> list[Path]:
    folder = root / "batches"
    return sorted(p for p in folder.iterdir() if p.suffix == ".pack") if folder.is_dir() else []


def packs(root: Path) -> list[Path]:
    folder = root / "packs"
    return sorted(p for p in folder.iterdir() if p.suffix == ".pack") if folder.is_dir() else []


def loose(root: Path) -> list[Path]:
    return [p for d in root.iterdir() if len(d.name) == 2 for p in d.iterdir()]


def age(path: Path, seconds: float = 2 * HOUR) -> None:
    """Set ``path``'s time ``seconds`` back: older than gc's grace period."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def files(root: Path) -> dict[Path, tuple[int, int]]:
    """Every file under ``root``: (inode, size)."""
    return {p: (p.stat().st_ino, p.stat().st_size) for p in root.rglob("*") if p.is_file()}


async def read_all(store: FileBlobStore, ids: list[str]) -> list[bytes]:
    return [await store.get(b) for b in ids]


async def test_a_put_many_of_new_blobs_is_one_batch_and_a_single_new_blob_is_loose(tmp_path):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    assert await store.put_many(DATAS) == IDS
    (batch,) = batches(root)
    assert loose(root) == [] and packs(root) == []
    assert await read_all(store, IDS) == DATAS
    assert await read_all(FileBlobStore(root), IDS) == DATAS
    # One new blob among known ones: a loose file of its own, no batch.
    one = b"a single new blob\n" * 50
    assert await store.put_many([DATAS[0], one, DATAS[1]]) == [IDS[0], blob_id(one), IDS[1]]
    assert batches(root) == [batch]
    assert loose(root) == [root / blob_id(one)[:2] / blob_id(one)[2:]]
    assert await store.get(blob_id(one)) == one


async def test_a_blob_in_a_known_batch_or_pack_is_read_without_listing_a_folder(
    tmp_path, monkeypatch
):
    """A read looks in the packs and batches it knows before it lists either folder
    again: a capture's blobs, in a batch until gc, cost no listing of the gc packs."""
    store = open_store(tmp_path / "store")
    root = store.root / "blobs"
    await store.blobs.put_many(DATAS[:5])
    await store.append("s1", [FileSnapshot(path="f0", before=None, after=IDS[0])])
    (batch,) = batches(root)
    age(batch)
    await collect_garbage(store, grace_seconds=HOUR)
    assert len(packs(root)) == 1 and batches(root) == []
    await store.blobs.put_many(DATAS[5:])
    reader = FileBlobStore(root)
    assert await reader.get(IDS[0]) == DATAS[0]  # lists what it has not seen yet
    assert await reader.get(IDS[5]) == DATAS[5]
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path):
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    for store_ in (store.blobs, reader):
        assert await read_all(store_, [IDS[0], *IDS[5:]]) == [DATAS[0], *DATAS[5:]]
        assert all([await store_.exists(b) for b in (IDS[0], *IDS[5:])])
    assert listed == []
    with pytest.raises(BlobNotFound):
        await reader.get(blob_id(b"never stored"))
    assert sorted(listed) == sorted([str(root / "batches"), str(root / "packs")])


async def test_content_a_batch_holds_is_not_written_again_and_refreshes_the_batch(tmp_path):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    await store.put_many(DATAS)
    (batch,) = batches(root)
    age(batch)
    before = files(root)
    assert await store.put_many(DATAS[:3]) == IDS[:3]
    assert await store.put_many(DATAS[4:5]) == IDS[4:5]
    assert files(root) == before  # no batch, no loose file, the batch unchanged
    assert batch.stat().st_mtime > time.time() - 60  # its time refreshed: gc spares it


async def test_gc_keeps_a_young_batch_whole_and_retires_an_old_one_into_a_pack(tmp_path):
    """A capture stores contents before its event is logged: a batch younger than
    the grace period keeps every entry. Once older, what is referenced moves to a
    gc pack, the batch goes, and its unreferenced entries with it (counted)."""
    store = open_store(tmp_path / "store")
    root = store.root / "blobs"
    await store.blobs.put_many(DATAS)
    (batch,) = batches(root)
    await store.append(
        "s1", [FileSnapshot(path=f"f{n}", before=None, after=IDS[n]) for n in range(6)]
    )
    other = [b"another capture's file %d\n" % n * 40 for n in range(2)]
    await store.blobs.put_many(other)
    young = [b for b in batches(root) if b != batch]
    assert len(young) == 1
    # Another process (it does not know the batch) puts DATAS[9] again: loose.
    await FileBlobStore(root).put(DATAS[9])
    result = await collect_garbage(store, grace_seconds=HOUR)
    assert result.removed == 0 and batch.exists() and packs(root) == []
    assert await read_all(store.blobs, IDS) == DATAS

    age(batch)
    result = await collect_garbage(store, grace_seconds=HOUR)
    assert batches(root) == young
    assert result.removed == 3  # DATAS[6:9]; DATAS[9] is loose too
    assert result.freed_bytes == sum(len(blob_codec.encode(d)) for d in DATAS[6:9])
    assert result.kept == 6 + 2 + 1  # the referenced, the young batch's, the loose one
    (pack,) = packs(root)
    assert set(_read_index(pack)) == set(IDS[:6])
    assert [p.parent.name + p.name for p in loose(root)] == [IDS[9]]
    fresh = FileBlobStore(root)
    assert await read_all(fresh, IDS[:6]) == DATAS[:6]
    assert await read_all(fresh, [blob_id(d) for d in other]) == other
    assert await fresh.get(IDS[9]) == DATAS[9]
    assert await fresh.missing(IDS) == set(IDS[6:9])
    with pytest.raises(BlobNotFound):
        await fresh.get(IDS[7])
    await store.close()


async def test_an_old_batchs_blob_a_young_batch_also_holds_is_counted_kept(tmp_path):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    await store.put_many(DATAS)
    (batch,) = batches(root)
    # Another process's batch (it does not know the first) also holds DATAS[9].
    other = b"another capture's file\n" * 40
    await FileBlobStore(root).put_many([DATAS[9], other])
    store._batches.refresh()
    age(batch)
    result = await store.gc(set(IDS[:6]), grace_seconds=HOUR)
    assert len(batches(root)) == 1 and batch not in batches(root)
    assert await FileBlobStore(root).get(IDS[9]) == DATAS[9]  # it is still stored
    assert (result.removed, result.kept) == (3, 6 + 2)
    assert result.freed_bytes == sum(len(blob_codec.encode(d)) for d in DATAS[6:9])


async def test_a_batch_put_again_after_it_grew_old_is_not_retired(tmp_path):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    await store.put_many(DATAS)
    (batch,) = batches(root)
    age(batch)
    await store.put_many(DATAS[:2])  # a restore writing back content the batch holds
    result = await store.gc(set(), grace_seconds=HOUR)
    assert result.removed == 0 and batches(root) == [batch]
    assert await read_all(FileBlobStore(root), IDS) == DATAS  # kept whole
    age(batch)
    result = await store.gc(set(), grace_seconds=HOUR)
    assert result.removed == len(IDS) and batches(root) == []
    assert await FileBlobStore(root).missing(IDS) == set(IDS)


async def test_a_batch_put_again_while_gc_retires_it_stays_whole(tmp_path, monkeypatch):
    """The put lands after gc found the batch old, before it unlinks it: the put
    relies on the batch, so gc leaves it."""
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    await store.put_many(DATAS)
    (batch,) = batches(root)
    age(batch)
    writer = FileBlobStore(root)
    writer._batches.refresh()  # it knows the batch, as the process that wrote it does
    pack = file_blob_gc._pack

    def pack_then_put(*args, **kwargs):  # between gc's age scan and the retirement
        pack(*args, **kwargs)
        writer._put_many(list(DATAS[3:5]))

    monkeypatch.setattr(file_blob_gc, "_pack", pack_then_put)
    result = await store.gc(set(IDS[:2]), grace_seconds=HOUR)
    assert batches(root) == [batch]
    assert result.removed == 0
    assert await read_all(FileBlobStore(root), IDS) == DATAS


async def test_another_instance_reads_a_batch_written_after_it_looked_and_once_retired(tmp_path):
    root = tmp_path / "blobs"
    writer = FileBlobStore(root)
    first = await writer.put_many(DATAS[:5])
    reader = FileBlobStore(root)
    assert await reader.get(first[0]) == DATAS[0]  # it has listed the batches: one
    second = await writer.put_many(DATAS[5:])
    assert len(batches(root)) == 2
    assert await reader.get(second[2]) == DATAS[7]
    assert await reader.missing(IDS) == set()
    assert await reader.exists(second[4])
    kept, bad = await reader.read_checked(IDS, keep_bytes=1 << 30)
    assert bad == {} and kept == dict(zip(IDS, DATAS, strict=True))
    for batch in batches(root):
        age(batch)
    await writer.gc(set(IDS), grace_seconds=HOUR)
    assert batches(root) == [] and len(packs(root)) == 1
    assert await read_all(reader, IDS) == DATAS
    kept, bad = await reader.read_checked(IDS, keep_bytes=1 << 30)
    assert bad == {} and kept == dict(zip(IDS, DATAS, strict=True))
    assert await reader.missing(IDS) == set()


_READER = """
import asyncio, hashlib, sys
from agent_host.session.blobs import FileBlobStore

async def main():
    store = FileBlobStore(sys.argv[1])
    for line in sys.stdin:
        out = []
        for blob in line.split():
            try:
                out.append(hashlib.sha256(await store.get(blob)).hexdigest())
            except Exception as exc:
                out.append(type(exc).__name__)
        print(" ".join(out), flush=True)

asyncio.run(main())
"""


def test_another_process_reads_a_batch_written_after_it_looked_and_once_retired(tmp_path):
    root = tmp_path / "blobs"
    writer = FileBlobStore(root)
    asyncio.run(writer.put_many(DATAS[:5]))
    proc = subprocess.Popen(
        [sys.executable, "-c", _READER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def read(ids: list[str]) -> list[str]:
        proc.stdin.write(" ".join(ids) + "\n")
        proc.stdin.flush()
        return proc.stdout.readline().split()

    try:
        assert read(IDS[:1]) == IDS[:1]  # it has listed the batches: one
        asyncio.run(writer.put_many(DATAS[5:]))
        assert read(IDS) == IDS
        for batch in batches(root):
            age(batch)
        asyncio.run(writer.gc(set(IDS[:8]), grace_seconds=HOUR))
        assert batches(root) == [] and len(packs(root)) == 1
        assert read(IDS) == IDS[:8] + ["BlobNotFound"] * 2
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0


async def test_a_whole_version_a_retired_batch_holds_becomes_a_delta_later(tmp_path):
    """gc retired a batch before the events pairing its versions were read: a later
    gc makes them deltas (read from then on), and once the whole copies are dead
    weight their pack is written anew without them."""
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    versions = file_versions(10)
    ids = await store.put_many(versions)
    age(batches(root)[0])
    await store.gc_and_pack(set(ids), HOUR, ())
    (whole,) = packs(root)
    assert batches(root) == [] and await store.delta_bases(ids) == {}
    assert all(e[3] is None for e in _read_index(whole).values())
    whole_size = whole.stat().st_size

    pairs = list(zip(ids, ids[1:], strict=False))
    await store.gc_and_pack(set(ids), HOUR, pairs)
    expected = dict(zip(ids[1:], ids, strict=False))
    assert await store.delta_bases(ids) == expected
    assert await FileBlobStore(root).delta_bases(ids) == expected
    assert await read_all(FileBlobStore(root), ids) == versions

    await store.gc_and_pack(set(ids), HOUR, ())  # the whole pack is nine tenths dead
    assert not whole.exists()
    held = {n.name: _read_index(n) for n in packs(root)}
    whole_entries = {b for index in held.values() for b, e in index.items() if e[3] is None}
    assert whole_entries == {ids[0]}
    assert sum(p.stat().st_size for p in packs(root)) < whole_size
    assert await FileBlobStore(root).delta_bases(ids) == expected
    assert await read_all(FileBlobStore(root), ids) == versions


def test_to_merge_leaves_a_geometric_progression_alone():
    assert to_merge({}) == set()
    assert to_merge({"a": 100}) == set()
    assert GROWTH == 2
    assert to_merge({"a": 1, "b": 2, "c": 6, "d": 18, "e": 54}) == set()
    assert to_merge({"big": 1000, "small": 10}) == set()


def test_to_merge_merges_the_smallest_packs_that_break_the_progression():
    # 10 < 2 x (1 + 2 + 6): the four smallest; 100 >= 2 x 19 stays.
    assert to_merge({"a": 1, "b": 2, "c": 6, "d": 10, "e": 100}) == {"a", "b", "c", "d"}
    # A break low down takes only what is below it.
    assert to_merge({"a": 5, "b": 20, "c": 30, "big": 1000}) == {"a", "b", "c"}
    assert to_merge({"a": 1, "b": 1, "big": 1000}) == {"a", "b"}
    # Broken to the top: all of them.
    assert to_merge({"a": 10, "b": 15, "c": 40}) == {"a", "b", "c"}


def test_to_merge_takes_equal_packs_together_whatever_their_order():
    assert to_merge({"b": 7, "a": 7}) == {"a", "b"}
    sizes = {"x": 3, "y": 3, "z": 3, "big": 500}
    for order in (["x", "y", "z", "big"], ["big", "z", "y", "x"], ["y", "big", "x", "z"]):
        assert to_merge({n: sizes[n] for n in order}) == {"x", "y", "z"}


async def test_forty_small_gcs_leave_about_log2_packs_and_keep_the_large_one(tmp_path):
    """Each gc packs a delta or two: small packs merge with one another, and the
    large first pack is never written again for them."""
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    rng = random.Random(27)
    large = [rng.randbytes(4096) for _ in range(100)]  # incompressible
    kept = set(await store.put_many(large))
    age(batches(root)[0])
    await store.gc_and_pack(kept, HOUR, ())
    (first,) = packs(root)
    chains = {k: file_versions(11, seed=k) for k in range(4)}
    last: dict[int, str] = {}
    for k, versions in chains.items():
        last[k] = await store.put(versions[0])
        kept.add(last[k])
    counts = []
    for i in range(40):
        k, n = i % 4, i // 4 + 1
        blob = await store.put(chains[k][n])
        kept.add(blob)
        await store.gc_and_pack(kept, 0, [(last[k], blob)])
        last[k] = blob
        names = packs(root)
        assert first in names, i  # never merged into the small ones' pack
        counts.append(len(names))
    sizes = sorted(p.stat().st_size for p in packs(root) if p != first)
    small_total = sum(sizes)
    assert small_total < first.stat().st_size / GROWTH
    bound = 2 + math.ceil(math.log2(small_total / sizes[0]))
    assert max(counts) <= bound, counts
    assert len(await FileBlobStore(root).delta_bases(kept)) == 40
    ids = [blob_id(d) for d in large] + [blob_id(v) for c in chains.values() for v in c]
    assert await read_all(FileBlobStore(root), ids) == large + [
        v for c in chains.values() for v in c
    ]


def damage_trailer(path: Path) -> bytes:
    """Flip the last byte of ``path`` (its trailer's magic); the bytes it then holds."""
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    return bytes(data)


def warned(caplog: pytest.LogCaptureFixture, path: Path) -> bool:
    return any(path.name in r.getMessage() and "skipped" in r.getMessage() for r in caplog.records)


async def test_a_gc_pack_with_a_damaged_trailer_is_skipped_and_never_removed(tmp_path, caplog):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    versions = file_versions(6)
    ids = await store.put_many(versions)
    age(batches(root)[0])
    await store.gc_and_pack(set(ids), HOUR, list(zip(ids, ids[1:], strict=False)))
    (pack,) = packs(root)
    others = await store.put_many(DATAS)  # a batch
    damaged = damage_trailer(pack)
    caplog.set_level(logging.WARNING, logger="agent_host.session.blob_packs")
    fresh = FileBlobStore(root)
    with pytest.raises(BlobNotFound, match=ids[0]):
        await fresh.get(ids[0])
    assert warned(caplog, pack)
    assert await fresh.missing(ids + others) == set(ids)
    kept, bad = await fresh.read_checked(ids + others, keep_bytes=1 << 30)
    assert bad == dict.fromkeys(ids, "missing")
    assert kept == dict(zip(others, DATAS, strict=True))
    # Two packs alike, which the next gc merges; then nothing referenced: the
    # damaged pack stays as it is through both.
    keep = set(others)
    for batch in batches(root):
        age(batch)
    await fresh.gc_and_pack(keep, HOUR, [])  # retires the batch of DATAS
    alike = set()
    for seed in (5, 6):
        more_ids = await fresh.put_many(file_versions(3, seed=seed))
        keep |= set(more_ids)
        before = set(packs(root))
        await fresh.gc_and_pack(keep, HOUR, list(zip(more_ids, more_ids[1:], strict=False)))
        alike |= set(packs(root)) - before
    assert len(alike) == 2 and len(packs(root)) == 4
    sizes = sorted(p.stat().st_size for p in alike)
    assert sizes[1] < GROWTH * sizes[0]
    await fresh.gc_and_pack(keep, HOUR, [])
    assert not any(p.exists() for p in alike)  # merged
    await fresh.gc(set(), 0)
    assert pack.read_bytes() == damaged
    assert await FileBlobStore(root).missing(ids) == set(ids)


async def test_a_young_batch_with_a_damaged_trailer_reads_as_missing_and_stays(tmp_path, caplog):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    await store.put_many(DATAS[:5])
    (batch,) = batches(root)
    await store.put_many(DATAS[5:])
    damaged = damage_trailer(batch)
    caplog.set_level(logging.WARNING, logger="agent_host.session.blob_packs")
    fresh = FileBlobStore(root)
    with pytest.raises(BlobNotFound, match=IDS[1]):
        await fresh.get(IDS[1])
    assert warned(caplog, batch)
    assert await fresh.missing(IDS) == set(IDS[:5])
    assert await read_all(fresh, IDS[5:]) == DATAS[5:]
    await fresh.gc(set(IDS), HOUR)
    assert batch.read_bytes() == damaged


async def test_an_old_batch_with_a_damaged_trailer_is_never_removed(tmp_path, caplog):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    await store.put_many(DATAS[:5])
    (batch,) = batches(root)
    await store.put_many(DATAS[5:])
    damaged = damage_trailer(batch)
    for each in batches(root):
        age(each)
    fresh = FileBlobStore(root)
    await fresh.gc(set(IDS), HOUR)
    assert await read_all(fresh, IDS[5:]) == DATAS[5:]  # the sound batch, retired
    assert batch.exists() and batch.read_bytes() == damaged
