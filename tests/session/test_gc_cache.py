"""collect_garbage in proportion to what changed: a second collection reads no log of
a session unchanged since the first, only the new events of one that grew, and
still keeps every blob an event or a truncation refers to, however the session
changed in between (grown, cut, cut after the recorded head and grown back,
deleted and made again, its cache damaged)."""

from __future__ import annotations

import orjson
import pytest

from agent_host.session import collect_garbage
from agent_host.session.events import FileSnapshot, UserPrompt


def blob(n: int) -> bytes:
    return f"content {n}\n".encode() * 20


async def put(store, n: int) -> str:
    return await store.blobs.put(blob(n))


def snap(b: str) -> FileSnapshot:
    return FileSnapshot(path="a.py", before=None, after=b)


def cached(store) -> bool:
    return getattr(store, "gc_cache", None) is not None


class Reads:
    """Counts the log reads of the store (since_seq 0: a whole log)."""

    def __init__(self, store, monkeypatch) -> None:
        self.whole: list[str] = []
        self.since: list[str] = []
        real = store.read

        async def read(session_id, since_seq=0):
            (self.since if since_seq else self.whole).append(session_id)
            return await real(session_id, since_seq)

        monkeypatch.setattr(store, "read", read)


async def test_a_second_collection_reads_only_what_changed(store, monkeypatch):
    if not cached(store):
        pytest.skip("this store keeps no gc cache: every collection reads every log")
    kept = [await put(store, n) for n in range(3)]
    for n, b in enumerate(kept):
        await store.append(f"s{n}", [UserPrompt(text="p"), snap(b)])
    assert (await collect_garbage(store, grace_seconds=0)).removed == 0
    reads = Reads(store, monkeypatch)
    later = await put(store, 9)
    await store.append("s1", [snap(later)])
    dead = await put(store, 10)
    result = await collect_garbage(store, grace_seconds=0)
    assert result.removed == 1 and not await store.blobs.exists(dead)
    assert reads.whole == [] and reads.since == ["s1"]
    for b in [*kept, later]:
        assert await store.blobs.exists(b)


async def test_every_change_between_collections_keeps_what_is_referred_to(store):
    a, b, c = [await put(store, n) for n in range(3)]
    await store.append("grows", [UserPrompt(text="p"), snap(a)])
    await store.append("cut", [UserPrompt(text="p"), snap(b)])
    await store.append("again", [UserPrompt(text="p"), snap(c)])
    await store.append("back", [UserPrompt(text="p")])
    assert (await collect_garbage(store, grace_seconds=0)).removed == 0
    # grows: new events; cut: cut behind its recorded head and grown again;
    # again: deleted and made again; back: cut after its recorded head, grown back
    # to the same head, so its head and updated_at are as recorded.
    d, f, g, h, i = [await put(store, n) for n in range(4, 9)]
    await store.append("grows", [snap(f)])
    await store.truncate("cut", 1)
    await store.append("cut", [snap(g)])
    await store.delete("again")
    await store.append("again", [UserPrompt(text="p"), snap(h)])
    await store.append("back", [snap(i), snap(d)])
    await store.truncate("back", 1)
    head = await store.head("back")
    assert head == 1
    dead = [await put(store, n) for n in range(20, 23)]
    result = await collect_garbage(store, grace_seconds=0)
    for kept in (a, b, f, g, h, i, d):  # b, i, d: only in truncations
        assert await store.blobs.exists(kept), kept
    for gone in [c, *dead]:
        assert not await store.blobs.exists(gone)
    assert result.removed == 1 + len(dead)
    # And once more, with nothing changed: the same answer from the records.
    assert (await collect_garbage(store, grace_seconds=0)).removed == 0
    for kept in (a, b, f, g, h, i, d):
        assert await store.blobs.exists(kept)


async def test_a_damaged_cache_is_read_past(store, caplog):
    if not cached(store):
        pytest.skip("this store keeps no gc cache")
    a = await put(store, 1)
    await store.append("s", [UserPrompt(text="p"), snap(a)])
    await collect_garbage(store, grace_seconds=0)
    for damage in (
        b"{not json",
        b'{"version": 4, "blobs": [], "sessions": {"s": [1, 2, 3, 0, [7]]}}',
        b"[]",
    ):
        store.gc_cache.write_bytes(damage)
        dead = await put(store, 30)
        assert (await collect_garbage(store, grace_seconds=0)).removed == 1
        assert await store.blobs.exists(a) and not await store.blobs.exists(dead)


async def test_a_collection_with_nothing_changed_leaves_the_cache_as_it_is(store, monkeypatch):
    """An unchanged session costs its record as cached: no log read, no per-blob
    work, and no new cache written; what it refers to is still kept."""
    if not cached(store):
        pytest.skip("this store keeps no gc cache")
    kept = [await put(store, n) for n in range(4)]
    for n, b in enumerate(kept):
        await store.append(f"s{n}", [UserPrompt(text="p"), snap(b), snap(kept[0])])
    await collect_garbage(store, grace_seconds=0)
    before = store.gc_cache.stat()
    reads = Reads(store, monkeypatch)
    dead = await put(store, 20)
    assert (await collect_garbage(store, grace_seconds=0)).removed == 1
    assert not await store.blobs.exists(dead)
    assert all([await store.blobs.exists(b) for b in kept])
    assert reads.whole == reads.since == []
    after = store.gc_cache.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


async def test_the_cache_drops_blobs_no_session_refers_to_any_more(store):
    if not cached(store):
        pytest.skip("this store keeps no gc cache")
    blobs = [await put(store, n) for n in range(10)]
    for n, b in enumerate(blobs):
        await store.append(f"s{n}", [UserPrompt(text="p"), snap(b)])
    await collect_garbage(store, grace_seconds=0)
    for n in range(1, 10):
        await store.delete(f"s{n}")
    await store.append("s0", [snap(blobs[1])])  # s0 now refers to a second blob
    assert (await collect_garbage(store, grace_seconds=0)).removed == 8
    data = orjson.loads(store.gc_cache.read_bytes())
    assert sorted(data["blobs"]) == sorted(blobs[:2])  # the table shed the others
    assert [data["blobs"][i] for i in data["sessions"]["s0"][4]] == sorted(blobs[:2])
    # The next collection reads that cache as it is.
    assert (await collect_garbage(store, grace_seconds=0)).removed == 0
    assert await store.blobs.exists(blobs[0]) and await store.blobs.exists(blobs[1])
