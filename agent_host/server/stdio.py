"""Standard input for the server, read so that no frame can exhaust memory."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import BinaryIO

CHUNK = 1 << 20
LARGEST_FRAME = 256 << 20
REFUSED = b"{}"
"""What a refused frame reads as: an object that is no message, which is logged."""

log = logging.getLogger(__name__)


class ChunkedStdin:
    """The reads pygls makes of stdin, with a bound on what one frame may claim.

    A buffered ``read(n)`` allocates all ``n`` bytes before reading any, so a frame
    claiming ``Content-Length: 99999999999999`` ended the server with a MemoryError.
    Bodies are read in 1 MiB chunks, and a frame over 256 MiB is refused without
    reading it: the stream picks up again at the next header the client sends.
    """

    def __init__(self, raw: BinaryIO, on_eof: Callable[[], None] | None = None) -> None:
        self._raw = raw
        self._on_eof = on_eof

    def readline(self, limit: int = -1) -> bytes:
        line = self._raw.readline(limit)
        if not line and self._on_eof is not None:
            # The client hung up. pygls stops the event loop as soon as this returns,
            # cancelling whatever still runs; let running turns close their logs first.
            on_eof, self._on_eof = self._on_eof, None
            on_eof()
        return line

    def read(self, n: int = -1) -> bytes:
        if 0 <= n <= CHUNK:
            return self._raw.read(n)
        if n > LARGEST_FRAME:
            log.error("refused a frame of %d bytes (the limit is %d)", n, LARGEST_FRAME)
            return REFUSED
        parts: list[bytes] = []
        left = n
        while left:
            part = self._raw.read(min(left, CHUNK) if left > 0 else CHUNK)
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts)
