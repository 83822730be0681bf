"""Standard input for the server: LSP frames read so that no input can exhaust memory
or derail the stream."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import BinaryIO

from ..jsonrpc.limits import LARGEST_MESSAGE
from ..jsonrpc.messages import INVALID_REQUEST, PARSE_ERROR

CHUNK = 1 << 20
LARGEST_FRAME = LARGEST_MESSAGE
LONGEST_HEADER_LINE = 8 << 10
REFUSED_KEY = "agentHost/refused"
"""What a refused frame reads as: ``{"jsonrpc": "2.0", REFUSED_KEY: {code, message}}``,
which the protocol answers with that error and id null."""

# A header inside a body means the body's Content-Length ran past its end: a raw
# line break never occurs in a JSON string, and the header is no JSON outside one.
_HEADER_IN_BODY = re.compile(rb"Content-Length: *\d+\r?\n")
_HEADER = re.compile(rb"([A-Za-z][A-Za-z0-9-]*): *([^\r\n]*)\r?\n")
_CONTENT_LENGTH = b"Content-Length:"
_HEADER_START = re.compile(rb"Content-Length: *\d*\r?")

log = logging.getLogger(__name__)


class ChunkedStdin:
    """The reads pygls makes of stdin, over a reader of ours that frames the stream.

    pygls reads ``readline()`` until a ``Content-Length`` header and an empty line,
    then ``read(n)``; a lying length made it lose the frames after, a header line
    without an end grew without bound, and an unparsable body went unanswered.
    Here each frame is cut from the stream first and handed to pygls re-framed:

    - header lines are at most 8 KiB; a longer one is discarded as it arrives;
    - garbage between frames is skipped up to the next ``Content-Length:``;
    - a body whose length runs into the next frame's header is cut there, and a
      frame over 256 MiB is skipped unread; either is refused (below);
    - a body that is not JSON, or is refused, reaches pygls as a small object
      naming the error, which :class:`~.protocol.AgentProtocol` answers.
    """

    def __init__(self, raw: BinaryIO, on_eof: Callable[[], None] | None = None) -> None:
        self._raw = raw
        self._on_eof = on_eof
        self._buf = bytearray()
        self._lines: list[bytes] = []
        self._body = b""

    # -- what pygls calls

    def readline(self, limit: int = -1) -> bytes:
        if not self._lines:
            body = self._next_body()
            if body is None:
                if self._on_eof is not None:
                    # The client hung up. pygls stops the event loop as soon as this
                    # returns, cancelling what still runs; let turns close their logs.
                    on_eof, self._on_eof = self._on_eof, None
                    on_eof()
                return b""
            self._body = body
            self._lines = [b"Content-Length: %d\r\n" % len(body), b"\r\n"]
        return self._lines.pop(0)

    def read(self, n: int = -1) -> bytes:
        body, self._body = self._body, b""
        return body

    # -- framing

    def _next_body(self) -> bytes | None:
        """The next frame's body, checked to be JSON (or replaced); None at the end."""
        while True:
            length = self._headers()
            if length is None:
                return None
            if length > LARGEST_FRAME:
                log.error("refused a frame of %d bytes (the limit is %d)", length, LARGEST_FRAME)
                if self._body_of(length, keep=False) is None:
                    return None
                return refusal(INVALID_REQUEST, f"the frame is over {LARGEST_FRAME} bytes")
            if length == 0:
                return refusal(PARSE_ERROR, "the body is empty")
            body = self._body_of(length, keep=True)
            if body is None:
                return None
            if len(body) < length:
                log.warning("a frame's Content-Length %d ran into the next frame", length)
                return refusal(
                    PARSE_ERROR,
                    f"the frame's Content-Length ({length}) runs past its body "
                    f"({len(body)} bytes) into the next frame; the frame was dropped",
                )
            try:
                json.loads(body)
            except (ValueError, RecursionError) as exc:
                log.warning("unparsable body %.200r: %s", body, exc)
                self._give_back_a_header_start(body)
                return refusal(PARSE_ERROR, f"the body is not JSON: {_reason(exc)}")
            return body

    def _headers(self) -> int | None:
        """Header lines up to the empty one; the Content-Length. None at the end."""
        length: int | None = None
        in_block = False
        while (line := self._line()) is not None:
            if not in_block and (start := line.find(_CONTENT_LENGTH)) > 0:
                log.warning("skipped %d bytes before a header", start)
                line = line[start:]
            header = _HEADER.fullmatch(line)
            if header is not None and header[1].lower() != b"content-length":
                in_block = True  # Content-Type, or a header LSP does not define
                continue
            if header is not None and header[2].strip().isdigit():
                length, in_block = int(header[2].strip()), True
                continue
            if in_block and line.strip() == b"":
                if length is not None:
                    return length
                log.warning("a frame without a Content-Length: skipped")
            elif line.strip():
                log.warning("skipped a line that is no header: %.200r", line)
                if (again := line.find(_CONTENT_LENGTH, 1)) > 0:
                    self._buf[:0] = line[again:]  # a header starts inside it: read it again
            length, in_block = None, False
        return None

    def _line(self) -> bytes | None:
        """The next line, at most LONGEST_HEADER_LINE bytes; None at the end."""
        searched = 0
        while True:
            end = self._buf.find(b"\n", searched)
            if end >= 0:
                line = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                return line
            if len(self._buf) > LONGEST_HEADER_LINE:
                # Discard the line as it comes, keeping what may begin a header.
                start = self._buf.find(_CONTENT_LENGTH, 1)
                keep = start if start > 0 else len(self._buf) - len(_CONTENT_LENGTH)
                log.warning("discarded %d bytes of a header line over the limit", keep)
                del self._buf[:keep]
            searched = len(self._buf)
            if not self._fill():
                return None

    def _body_of(self, length: int, keep: bool) -> bytes | None:
        """``length`` bytes, or fewer if a header begins in them; None at the end.

        ``keep=False`` discards them as they come, keeping only what may be a header.
        """
        taken = 0  # bytes already discarded (keep=False)
        searched = 0
        while True:
            window = min(len(self._buf), length - taken)
            cut = _HEADER_IN_BODY.search(self._buf, max(0, searched - 64), window)
            if cut is not None:
                body = bytes(self._buf[: cut.start()]) if keep else b""
                del self._buf[: cut.start()]
                return body
            searched = window
            if taken + window == length:
                body = bytes(self._buf[:window]) if keep else b""
                del self._buf[:window]
                return body
            if not keep and window > 64:
                del self._buf[: window - 64]
                taken += window - 64
                searched = 64
            if not self._fill():
                return None

    def _give_back_a_header_start(self, body: bytes) -> None:
        """If ``body`` ends in the start of a header, put that back to be read again.

        A Content-Length a few bytes too long takes the start of the next frame's
        header into the body, where it is no whole header to cut at.
        """
        for size in range(min(len(body), 40), 0, -1):
            tail = body[-size:]
            if _CONTENT_LENGTH.startswith(tail) or _HEADER_START.fullmatch(tail):
                self._buf[:0] = tail
                return

    def _fill(self) -> bool:
        read1 = getattr(self._raw, "read1", None)
        chunk = read1(CHUNK) if read1 is not None else self._raw.read(CHUNK)
        self._buf += chunk
        return bool(chunk)


def refusal(code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", REFUSED_KEY: {"code": code, "message": message}}).encode()


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)
