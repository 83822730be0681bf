"""The checkpointer contract: the blob store each checkpointer carries.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import os


async def test_blobs_read_back_whatever_their_content(store):
    """Blobs are kept compressed where the store compresses (see blob_codec): what
    is read back is the content, whether it compresses, does not, is empty, or is
    itself compressed data."""
    import hashlib

    import zstandard

    text = b"".join(b"line %d of a file that compresses well\n" % i for i in range(200))
    datas = [
        text,
        os.urandom(4096),
        b"",
        b"x",
        zstandard.ZstdCompressor().compress(text),
        b"\x28\xb5\x2f\xfd not a frame at all, only its magic number" * 4,
    ]
    ids = await store.blobs.put_many(datas)
    assert ids == [hashlib.sha256(d).hexdigest() for d in datas]
    for blob, data in zip(ids, datas, strict=True):
        assert await store.blobs.get(blob) == data
    kept, bad = await store.blobs.read_checked(ids, keep_bytes=1 << 20)
    assert bad == {} and kept == dict(zip(ids, datas, strict=True))
    assert await store.blobs.put(text) == ids[0]
