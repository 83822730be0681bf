"""The checkpointer contract: versions of a file packed as deltas at gc (blob_delta).

The stores that write deltas (``blobs.writes_deltas``: file, SQLite, PostgreSQL)
must have made later versions deltas after a gc; every store, those that never
write one (memory: nothing to save; SQLAlchemy: not built for it yet) included,
must read every version back byte for byte after gc and keep every base a kept
blob needs.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import random

from agent_host.session.blob_delta import MAX_DEPTH
from agent_host.session.events import FileSnapshot, UserPrompt
from agent_host.session.store.gc import collect_garbage


def file_versions(count: int, seed: int = 27, size: int = 4096) -> list[bytes]:
    """``count`` versions of a text file of about ``size`` bytes, one line changed
    in each."""
    rng = random.Random(seed)
    lines = [f"line {n}: {rng.random():.12f} {'word ' * rng.randrange(4, 12)}" for n in range(400)]
    while sum(map(len, lines)) > size:
        lines.pop()
    out = []
    for turn in range(count):
        lines[rng.randrange(len(lines))] = f"    value = compute({turn}, {rng.random():.6f})"
        out.append(("\n".join(lines) + "\n").encode())
    return out


async def store_versions(store, session_id: str, path: str, datas: list[bytes]) -> list[str]:
    """Each version put and snapshotted as a turn's change of ``path``; their ids."""
    ids = await store.blobs.put_many(datas)
    events = []
    for before, after in zip([None, *ids], ids, strict=False):
        events += [UserPrompt(text="edit"), FileSnapshot(path=path, before=before, after=after)]
    await store.append(session_id, events)
    return ids


def chain_depth(blob: str, bases: dict[str, str]) -> int:
    hops = 0
    while blob in bases:
        blob, hops = bases[blob], hops + 1
    return hops


async def test_versions_are_deltas_after_gc_and_each_reads_back_whole(store):
    a, b = file_versions(40, seed=1), file_versions(25, seed=2)
    ids_a = await store_versions(store, "s1", "a.py", a)
    ids_b = await store_versions(store, "s1", "b.py", b)
    await collect_garbage(store, grace_seconds=0)
    ids, datas = ids_a + ids_b, a + b
    bases = await store.blobs.delta_bases(ids)
    if store.blobs.writes_deltas:
        # All but the whole version each chain starts from (one per MAX_DEPTH + 1).
        assert len(bases) >= len(ids) - 2 * (40 // (MAX_DEPTH + 1) + 1)
        pairs = zip(ids, ids[1:], strict=False)
        assert all(bases[after] == before for before, after in pairs if after in bases)
        assert max(chain_depth(x, bases) for x in ids) == MAX_DEPTH
    else:
        assert bases == {}
    for blob, data in zip(ids, datas, strict=True):
        assert await store.blobs.get(blob) == data
    kept, bad = await store.blobs.read_checked(ids, keep_bytes=1 << 30)
    assert bad == {} and kept == dict(zip(ids, datas, strict=True))
    assert await store.blobs.missing(ids) == set()
    # A second gc changes nothing that reads.
    again = await collect_garbage(store, grace_seconds=0)
    assert again.removed == 0
    assert await store.blobs.delta_bases(ids) == bases
    for blob, data in zip(ids, datas, strict=True):
        assert await store.blobs.get(blob) == data


async def test_gc_keeps_the_bases_a_kept_sessions_blobs_need(store):
    """A session is deleted whose versions are the bases of a version another
    session still refers to (a fork made from a later point, a copied snapshot):
    gc keeps every base in the chain and removes only what nothing needs."""
    datas = file_versions(12)
    ids = await store_versions(store, "first", "a.py", datas)
    await collect_garbage(store, grace_seconds=0)
    await store.append("fork", [FileSnapshot(path="a.py", before=None, after=ids[-1])])
    await store.delete("first")
    await collect_garbage(store, grace_seconds=0)
    assert await store.blobs.get(ids[-1]) == datas[-1]
    bases = await store.blobs.delta_bases(ids)
    needed, blob = {ids[-1]}, ids[-1]
    while blob in bases:
        blob = bases[blob]
        needed.add(blob)
    assert await store.blobs.missing(ids) == set(ids) - needed
    if store.blobs.writes_deltas:
        assert len(needed) > 1
    # Once the fork goes too, the whole chain goes.
    await store.delete("fork")
    await collect_garbage(store, grace_seconds=0)
    assert await store.blobs.missing(ids) == set(ids)


async def test_a_file_put_back_as_it_was_makes_no_loop(store):
    """v0 -> v1 -> v0 -> v1: each pair could make a delta of the other; chains never
    loop, and each version reads back."""
    v0, v1 = file_versions(2)
    ids = await store.blobs.put_many([v0, v1])
    await store.append(
        "s1",
        [
            FileSnapshot(path="a.py", before=ids[0], after=ids[1]),
            FileSnapshot(path="a.py", before=ids[1], after=ids[0]),
            FileSnapshot(path="a.py", before=ids[0], after=ids[1]),
        ],
    )
    await collect_garbage(store, grace_seconds=0)
    await collect_garbage(store, grace_seconds=0)
    bases = await store.blobs.delta_bases(ids)
    assert len(bases) <= 1
    assert [await store.blobs.get(b) for b in ids] == [v0, v1]


async def test_content_put_again_after_gc_is_kept_whatever_its_form(store):
    """A version packed by gc, its session deleted, then the same content put again
    (a restore writing it back) within the grace period: gc keeps it, readable."""
    datas = file_versions(6)
    ids = await store_versions(store, "s1", "a.py", datas)
    await collect_garbage(store, grace_seconds=0)
    await store.delete("s1")
    assert await store.blobs.put(datas[-1]) == ids[-1]
    await collect_garbage(store, grace_seconds=3600)
    assert await store.blobs.get(ids[-1]) == datas[-1]
