"""The MCP SDK's stdio client, reading a server's output in linear time.

The SDK's reader joins each chunk of stdout to what it holds and splits the whole
again: a message of megabytes (a big tool result) costs time quadratic in its size,
and, with the chunks already buffered, in one stretch without yielding -- an 8 MB
result held the event loop for over a second. The SDK offers no hook for its reader,
so this shim (the one place we reach in) replaces the text stream it reads through
(``mcp.client.stdio.TextReceiveStream``) with one that hands over only whole lines,
gathered in a list and joined once, and lets the loop run after every read.
"""

from __future__ import annotations

import codecs
from typing import Any

_installed = False


def install() -> None:
    """Make the SDK's stdio client read through :class:`LineStream` (idempotent)."""
    global _installed
    if _installed:
        return
    import mcp.client.stdio

    mcp.client.stdio.TextReceiveStream = LineStream  # type: ignore[misc, assignment]
    _installed = True


class LineStream:
    """Text from a byte stream, each item ending at a line break (the last may not)."""

    def __init__(self, transport_stream: Any, encoding: str = "utf-8", errors: str = "strict"):
        self._stream = transport_stream
        self._decoder = codecs.getincrementaldecoder(encoding)(errors=errors)
        self._parts: list[str] = []

    def __aiter__(self) -> LineStream:
        return self

    async def __anext__(self) -> str:
        import anyio

        while True:
            try:
                data = await self._stream.receive()
            except anyio.EndOfStream:
                rest = "".join(self._parts) + self._decoder.decode(b"", final=True)
                self._parts = []
                if rest:
                    return rest
                raise StopAsyncIteration from None
            # A read of buffered data does not suspend: without this, a message
            # of many chunks is read in one stretch of the loop.
            await anyio.lowlevel.checkpoint()
            text = self._decoder.decode(data)
            cut = text.rfind("\n")
            if cut < 0:
                self._parts.append(text)
                continue
            self._parts.append(text[: cut + 1])
            whole = "".join(self._parts)
            self._parts = [text[cut + 1 :]] if cut + 1 < len(text) else []
            return whole

    async def aclose(self) -> None:
        await self._stream.aclose()
