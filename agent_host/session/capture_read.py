"""Reading the files a capture pass found changed: in bounded batches, each file
read whole and checked by fstat before and after, so that a file written to while
it is read is not taken for what it held."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

from .capture_diff import Read
from .capture_walk import Sig, is_regular, sig_of

READ_BATCH_BYTES = 16 * 1024 * 1024
"""Content read before it is stored and let go: a first index of a large workspace
never holds more than this (plus one file) in memory."""


def batches(reads: list[Read]) -> Iterator[list[Read]]:
    """``reads`` in order, cut where a batch's size reaches READ_BATCH_BYTES."""
    batch: list[Read] = []
    size = 0
    for item in reads:
        batch.append(item)
        size += item.sig[0]
        if size >= READ_BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def read_batch(
    root: Path, batch: list[Read], max_bytes: int
) -> list[tuple[Read, Sig | None, bytes | None]]:
    """(item, sig, content) for each file: sig None if it is gone or no longer a
    regular file; content None if it could not be read whole."""
    # A display path is relative to the first root, or absolute (join keeps those).
    return [
        (item, *_read_file(os.path.join(root, item.path), item.sig, max_bytes)) for item in batch
    ]


def _read_file(path: str, walked: Sig, max_bytes: int) -> tuple[Sig | None, bytes | None]:
    for _ in range(2):
        try:
            # O_NOFOLLOW: a file swapped for a symlink is not read through it;
            # O_NONBLOCK: nor is one swapped for a fifo waited on.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        except OSError as exc:
            return (None, None) if exc.errno == errno.ELOOP else (walked, None)
        try:
            before = sig_of(os.fstat(fd))
            if not is_regular(before):
                return None, None
            if before[0] > max_bytes:
                return before, None
            want, chunks = before[0] + 1, []  # a byte past the size shows a file that grew
            while want > 0:
                chunk = os.read(fd, want)
                if not chunk:
                    break
                chunks.append(chunk)
                want -= len(chunk)
            after = sig_of(os.fstat(fd))
        except OSError:
            return walked, None
        finally:
            os.close(fd)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if after == before and len(data) == before[0]:
            return before, data
    return walked, None  # written to while it was read, twice
