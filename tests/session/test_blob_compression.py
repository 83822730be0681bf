"""Blobs are stored compressed on every backend, read back as their content, and a
store written before compression (every blob as it is) reads unchanged."""

from __future__ import annotations

import hashlib
import os

import pytest
import zstandard

from agent_host.session import blob_codec
from agent_host.session.errors import BlobCorrupt

from . import file_blob_tamper

TEXT = b"".join(b"line %d of a source file that an agent edits\n" % i for i in range(100))


def stored(store, backend, blob: str) -> bytes:
    """The bytes the backend holds for ``blob``, behind the store's back."""
    if backend.name == "file":
        return file_blob_tamper.stored_bytes(store.blobs, blob)
    if backend.name == "sqlite":
        ((data,),) = store._conn.execute("SELECT data FROM blobs WHERE id = ?", (blob,)).fetchall()
        return bytes(data)
    if backend.name == "postgres":
        with store._pool.connection("read") as conn:
            rows = conn.execute(
                f"SELECT data FROM {store.schema}.blob_chunks WHERE blob_id = %s ORDER BY n",
                (blob,),
            ).fetchall()
        return b"".join(bytes(d) for (d,) in rows)
    pytest.skip("the memory store keeps content as it is: nothing to save on disk")


def store_as_before(store, backend, data: bytes) -> str:
    """Store ``data`` as a store written before compression did: as it is."""
    blob = hashlib.sha256(data).hexdigest()
    if backend.name == "file":
        path = store.blobs._path(blob)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    elif backend.name == "sqlite":
        store._conn.execute(
            "INSERT INTO blobs (id, data, touched_at) VALUES (?, ?, 0)", (blob, data)
        )
    elif backend.name == "postgres":
        with store._pool.connection("write") as conn:
            conn.execute(
                f"INSERT INTO {store.schema}.blobs (id, size, touched_at) VALUES (%s, %s, 0)",
                (blob, len(data)),
            )
            conn.execute(
                f"INSERT INTO {store.schema}.blob_chunks (blob_id, n, data) VALUES (%s, 0, %s)",
                (blob, data),
            )
    else:
        store.blobs._blobs[blob] = (data, 0.0)
    return blob


async def test_compressible_content_is_stored_smaller_and_read_whole(store, backend):
    blob = await store.blobs.put(TEXT)
    (other,) = await store.blobs.put_many([TEXT + b"one more line\n"])
    assert await store.blobs.get(blob) == TEXT
    assert await backend.open().blobs.get(other) == TEXT + b"one more line\n"
    kept, bad = await store.blobs.read_checked([blob, other], keep_bytes=1 << 20)
    assert kept == {blob: TEXT, other: TEXT + b"one more line\n"} and bad == {}
    on_disk = stored(store, backend, blob)
    assert len(on_disk) < len(TEXT) // 4
    assert zstandard.ZstdDecompressor().decompress(on_disk) == TEXT


async def test_incompressible_and_tiny_content_is_stored_as_it_is(store, backend):
    noise = os.urandom(5000)
    blob, tiny = await store.blobs.put_many([noise, b"x"])
    assert await store.blobs.get(blob) == noise
    assert await store.blobs.get(tiny) == b"x"
    assert stored(store, backend, blob) == noise
    assert stored(store, backend, tiny) == b"x"


async def test_content_that_is_itself_a_zstd_frame_round_trips(store, backend):
    frame = zstandard.ZstdCompressor().compress(TEXT)  # a user's .zst file
    blob = await store.blobs.put(frame)
    assert await store.blobs.get(blob) == frame
    kept, _ = await store.blobs.read_checked([blob], keep_bytes=1 << 20)
    assert kept == {blob: frame}


async def test_blobs_of_a_store_written_before_compression_read_unchanged(store, backend):
    old = store_as_before(store, backend, TEXT)
    # Content stored as it is that begins like a zstd frame: tried as one, then as it is.
    frame = zstandard.ZstdCompressor().compress(TEXT)
    old_frame = store_as_before(store, backend, frame)
    assert await store.blobs.get(old) == TEXT
    assert await store.blobs.get(old_frame) == frame
    kept, bad = await store.blobs.read_checked([old, old_frame], keep_bytes=1 << 20)
    assert kept == {old: TEXT, old_frame: frame} and bad == {}
    assert await store.blobs.missing([old, old_frame]) == set()
    # Stored again: known content, not rewritten.
    assert await store.blobs.put(TEXT) == old
    assert await store.blobs.get(old) == TEXT


async def test_a_damaged_compressed_blob_is_corrupt(store, backend):
    blob = await store.blobs.put(TEXT)
    on_disk = stored(store, backend, blob)
    # A frame that decodes to other content (one byte of the text changed).
    other = blob_codec.encode(TEXT.replace(b"line 7 ", b"line 8 "))
    assert other[:4] == on_disk[:4]
    if backend.name == "file":
        file_blob_tamper.overwrite(store.blobs, blob, other)
    elif backend.name == "sqlite":
        store._conn.execute("UPDATE blobs SET data = ? WHERE id = ?", (other, blob))
    else:
        with store._pool.connection("damage") as conn:
            conn.execute(
                f"UPDATE {store.schema}.blob_chunks SET data = %s WHERE blob_id = %s",
                (other, blob),
            )
    with pytest.raises(BlobCorrupt, match=blob):
        await store.blobs.get(blob)
    _, bad = await store.blobs.read_checked([blob], keep_bytes=1 << 20)
    assert bad == {blob: "damaged"}


def test_a_frame_claiming_too_much_content_is_not_decompressed():
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"a" * 1000)
    # The frame's size field (after magic and the descriptor byte) claims far more.
    assert blob_codec.decode(hashlib.sha256(b"a" * 1000).hexdigest(), frame) == b"a" * 1000
    huge = bytearray(frame)
    huge[4] = (huge[4] & 0x3F) | 0xC0  # an 8-byte content size field
    claimed = huge[:5] + (1 << 40).to_bytes(8, "little") + huge[5 + 2 :]
    assert blob_codec.decode(hashlib.sha256(b"a" * 1000).hexdigest(), bytes(claimed)) is None
