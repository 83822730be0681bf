"""How a blob's content is kept in a store: zstd-compressed when that is smaller, else
as it is.

Every store keeps blobs this way (files, SQLite, PostgreSQL, SQLAlchemy). The id is
the sha256 of the content, never of the stored bytes, so the check every read makes
also tells the two forms apart: stored bytes that begin with zstd's magic number are
tried as a frame first, and kept as they are when that does not give the content.
Stores written before compression (every blob as it is) read unchanged, a blob whose
content is itself a zstd file included; a blob stored again is not rewritten, so old
blobs stay as they are until gc removes them or packs them as deltas (below).

:data:`LEVEL` was chosen by bench/bench_store_p12.py on the storage study of issue 27
(text files of 4 KB): higher levels saved little more and cost several times the CPU.

A third form is written only by gc (see blob_delta): a *delta*, :data:`DELTA_MAGIC`, the
32 bytes of its base blob's id, then a zstd frame compressed with the base's content as
a raw-content dictionary -- one version of a file stored as what changed since another.
Reading one needs the base's content (resolved by blob_delta); the result is checked
against the id as every read is, so a wrong or damaged base can only give an error.
Content that merely begins like a delta is told apart by that same check: it hashes to
its id as it is.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import zstandard

LEVEL = 3
_MAGIC = b"\x28\xb5\x2f\xfd"
_SMALLEST = 32
"""Content shorter than this is kept as it is: a frame's header would eat the saving."""

_LARGEST = 1 << 31
"""The most content a stored frame is trusted to hold (no blob comes near it)."""

DELTA_MAGIC = b"AHD\x01"
"""Begins a delta's stored bytes (never zstd's magic, so old readers call it damaged
rather than misread it)."""
_DELTA_HEAD = len(DELTA_MAGIC) + 32

_local = threading.local()
"""A compressor and a decompressor per thread: zstandard's are not thread-safe, and
blob stores work on threads."""


def _zstd() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    pair = getattr(_local, "pair", None)
    if pair is None:
        import zstandard  # lazily: only a store that writes or reads blobs needs it

        pair = _local.pair = (
            zstandard.ZstdCompressor(level=LEVEL, write_content_size=True),
            zstandard.ZstdDecompressor(),
        )
    return pair


def encode(content: bytes) -> bytes:
    """The bytes to store for ``content``: a zstd frame when it is smaller."""
    if len(content) < _SMALLEST:
        return content
    packed = _zstd()[0].compress(content)
    return packed if len(packed) < len(content) else content


def decode(blob: str, stored: bytes) -> bytes | None:
    """The content of ``blob`` from its ``stored`` bytes (either form); None when they
    hold no content whose sha256 is ``blob`` (damaged)."""
    import hashlib

    if stored[:4] == _MAGIC:
        import zstandard

        try:
            # A damaged header could claim any size: never allocate past the cap.
            if 0 <= zstandard.frame_content_size(stored) <= _LARGEST:
                content = _zstd()[1].decompress(stored)
                if hashlib.sha256(content).hexdigest() == blob:
                    return content
        except zstandard.ZstdError:
            pass  # not a frame of ours: content that begins like one
    return stored if hashlib.sha256(stored).hexdigest() == blob else None


def delta_of(base: bytes, content: bytes, base_blob: str) -> bytes:
    """The delta form of ``content`` against ``base`` (whose id is ``base_blob``)."""
    import zstandard

    raw = zstandard.ZstdCompressionDict(base, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    frame = zstandard.ZstdCompressor(
        level=LEVEL, dict_data=raw, write_content_size=True, write_dict_id=False
    ).compress(content)
    return DELTA_MAGIC + bytes.fromhex(base_blob) + frame


def delta_base(blob: str, stored: bytes) -> str | None:
    """The base's id if ``stored`` is in the delta form; None if it is a whole form
    (content that begins like a delta but hashes to ``blob`` as it is, included)."""
    import hashlib

    if len(stored) <= _DELTA_HEAD or stored[: len(DELTA_MAGIC)] != DELTA_MAGIC:
        return None
    if hashlib.sha256(stored).hexdigest() == blob:
        return None
    return stored[len(DELTA_MAGIC) : _DELTA_HEAD].hex()


def apply_delta(blob: str, stored: bytes, base: bytes) -> bytes | None:
    """The content of ``blob`` from its delta form and its base's content; None when
    they give no content whose sha256 is ``blob`` (damaged)."""
    import hashlib

    import zstandard

    frame = stored[_DELTA_HEAD:]
    try:
        if not 0 <= zstandard.frame_content_size(frame) <= _LARGEST:
            return None
        raw = zstandard.ZstdCompressionDict(base, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        content = zstandard.ZstdDecompressor(dict_data=raw).decompress(frame)
    except zstandard.ZstdError:
        return None
    return content if hashlib.sha256(content).hexdigest() == blob else None
