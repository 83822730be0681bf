"""How a blob's content is kept in a store: zstd-compressed when that is smaller, else
as it is.

Every store keeps blobs this way (files, SQLite, PostgreSQL, SQLAlchemy). The id is
the sha256 of the content, never of the stored bytes, so the check every read makes
also tells the two forms apart: stored bytes that begin with zstd's magic number are
tried as a frame first, and kept as they are when that does not give the content.
Stores written before compression (every blob as it is) read unchanged, a blob whose
content is itself a zstd file included; a blob stored again is not rewritten, so old
blobs stay as they are until gc removes them.

:data:`LEVEL` was chosen by bench/bench_store_p12.py on the storage study of issue 27
(text files of 4 KB): higher levels saved little more and cost several times the CPU.
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
