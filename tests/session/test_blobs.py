"""The blob store behind file snapshots, on every backend, and its garbage collector."""

from __future__ import annotations

import hashlib
import os

import pytest

from agent_host.session import BlobNotFound, collect_garbage
from agent_host.session.errors import BlobCorrupt
from agent_host.session.events import FileSnapshot, UnknownEvent, UserPrompt

from . import file_blob_tamper


async def test_put_get_round_trips_and_ids_are_sha256(store):
    for data in (b"", b"print('hi')\n", bytes(range(256)) * 100):
        blob = await store.blobs.put(data)
        assert blob == hashlib.sha256(data).hexdigest()
        assert await store.blobs.get(blob) == data
        assert await store.blobs.exists(blob)


async def test_same_content_is_stored_once(store, backend):
    a = await store.blobs.put(b"same")
    b = await store.blobs.put(b"same")
    assert a == b
    if backend.name == "file":
        files = [p for p in (store.root / "blobs").rglob("*") if p.is_file()]
        assert len(files) == 1
    if backend.name == "postgres":
        with store._pool.connection("count") as conn:
            rows = conn.execute(f"SELECT count(*) FROM {store.schema}.blob_chunks").fetchone()
        assert rows == (1,)


async def test_a_large_blob_is_stored_in_chunks_and_read_whole(store, backend):
    data = os.urandom(3 * 1024 * 1024 + 7)  # a little over 3 MiB, incompressible
    blob = await store.blobs.put(data)
    assert await store.blobs.get(blob) == data
    assert await backend.open().blobs.get(blob) == data
    kept, bad = await store.blobs.read_checked([blob], keep_bytes=len(data))
    assert kept == {blob: data} and bad == {}
    if backend.name == "postgres":
        with store._pool.connection("count") as conn:
            rows = conn.execute(
                f"SELECT count(*), max(length(data)) FROM {store.schema}.blob_chunks "
                "WHERE blob_id = %s",
                (blob,),
            ).fetchone()
        assert rows == (4, 1024 * 1024)


async def test_missing_and_malformed_blob_ids(store):
    missing = hashlib.sha256(b"never stored").hexdigest()
    with pytest.raises(BlobNotFound, match="not in the blob store"):
        await store.blobs.get(missing)
    assert not await store.blobs.exists(missing)
    for bad in ("../../etc/passwd", "ABC", "g" * 64):
        with pytest.raises(BlobNotFound, match="not a blob id"):
            await store.blobs.get(bad)


async def test_put_many_and_read_checked_report_each_blob(store, backend):
    datas = [b"one", b"two", b"one", b"x" * 5000]
    ids = await store.blobs.put_many(datas)
    assert ids == [hashlib.sha256(d).hexdigest() for d in datas]
    missing = hashlib.sha256(b"never stored").hexdigest()
    # Damage one behind the store's back, as a disk or a hand edit would.
    damaged = ids[1]
    if backend.name == "file":
        file_blob_tamper.overwrite(store.blobs, damaged, b"tw0")
    elif backend.name == "sqlite":
        store._conn.execute("UPDATE blobs SET data = x'00' WHERE id = ?", (damaged,))
    elif backend.name == "postgres":
        with store._pool.connection("damage") as conn:
            conn.execute(
                f"UPDATE {store.schema}.blob_chunks SET data = 'tw0' WHERE blob_id = %s",
                (damaged,),
            )
    else:
        store.blobs._blobs[damaged] = (b"tw0", 0.0)
    with pytest.raises(BlobCorrupt, match=damaged):
        await store.blobs.get(damaged)
    kept, bad = await store.blobs.read_checked([*ids, missing], keep_bytes=10)
    assert bad == {damaged: "damaged", missing: "missing"}
    assert kept == {ids[0]: b"one"}  # the 5000 bytes did not fit: read again later
    kept, bad = await store.blobs.read_checked([ids[3]], keep_bytes=1 << 20)
    assert kept == {ids[3]: b"x" * 5000} and bad == {}


async def test_blobs_survive_reopening(store, backend):
    blob = await store.blobs.put(b"durable")
    assert await backend.open().blobs.get(blob) == b"durable"


async def test_gc_removes_only_unreferenced_blobs(store):
    live = await store.blobs.put(b"before edit")
    after = await store.blobs.put(b"after edit")
    in_truncation = await store.blobs.put(b"only in a truncated event")
    in_future_event = await store.blobs.put(b"referenced by a newer version's event")
    dead = await store.blobs.put(b"nobody refers to me")
    await store.append(
        "s1",
        [
            UserPrompt(text="edit"),
            FileSnapshot(path="a.py", before=live, after=after),
            UnknownEvent(kind="image_attached", data={"image": {"blob": in_future_event}}),
            UserPrompt(text="second"),
            FileSnapshot(path="b.py", before=None, after=in_truncation),
        ],
    )
    await store.truncate("s1", 3)
    result = await collect_garbage(store, grace_seconds=0)
    assert result.removed == 1
    assert result.freed_bytes == len(b"nobody refers to me")
    assert result.kept == 4
    for blob in (live, after, in_truncation, in_future_event):
        assert await store.blobs.exists(blob)
    assert not await store.blobs.exists(dead)


async def test_gc_spares_blobs_written_within_the_grace_period(store):
    """A snapshot is stored just before its event: gc in between must not take it."""
    fresh = await store.blobs.put(b"event not appended yet")
    result = await collect_garbage(store)
    assert result.removed == 0
    assert await store.blobs.exists(fresh)


async def test_gc_after_delete_frees_the_sessions_blobs(store):
    blob = await store.blobs.put(b"content")
    await store.append("s1", [FileSnapshot(path="a", before=None, after=blob)])
    await store.delete("s1")
    assert (await collect_garbage(store, grace_seconds=0)).removed == 1
