"""ACP's stdio, read and written by us: the SDK's connection sees only messages.

The SDK's own stdio transport died on a line that is JSON but no object (``[]``,
``null``: ``'list' object has no attribute 'get'`` in its message loop), answered
nothing to a line that is not JSON, grew a line without bound, and, its stdout
protocol having no ``connection_lost``, waited forever on a client that stopped
reading and left. Its connection also takes a message-level transport -- an object
with ``send``/``receive``/``close`` of decoded dicts, the seam its HTTP and
WebSocket transports use (``acp._transport.Transport``, a runtime-checkable
protocol, matched structurally). That seam is the one SDK detail relied on here,
and only here. :class:`StdioTransport` is one, over stdin and stdout:

- a line over ``LARGEST_MESSAGE`` is skipped as it arrives: -32600, id null;
- a line that is not JSON (bad JSON, bad UTF-8, two values, nested too deeply):
  -32700 Parse error, id null;
- JSON that is no JSON-RPC 2.0 message (an array -- batches are not supported --
  a string, a number, null, an object without method or id): -32600, the id when
  it has a usable one;
- a request with an array over ``MAX_LIST_ITEMS`` in its params: -32602 naming it;
- ACP's methods the SDK does not route (``session/delete``) are renamed to the
  extension method that answers them (``extensions.UNROUTED``);
- errors the SDK builds from pydantic's are cut down on the way out (``errors``);
- the client gone -- stdin at its end, or stdout closed by the reader -- ends
  ``receive``, so the connection closes and ``serve_stdio`` shuts the sessions
  down; sends after that wait at most ``HANG_UP_GRACE`` for a blocked stdout.

A handler may ask for work to run once its answer is written (:func:`after_response`):
what a session/new announces about the new session must follow the response that
names it, or a client that keys updates by the ids it knows drops them. The request
a handler serves is known from a context variable set in ``receive``: the SDK starts
each request's task right after ``receive`` returns it, and a task copies the
context it was made in (a second SDK detail relied on, checked by the tests).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Coroutine
from contextvars import ContextVar
from typing import Any

from ..jsonrpc.limits import LARGEST_MESSAGE, MAX_LIST_ITEMS
from ..jsonrpc.messages import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    invalid_message,
    is_id,
    overlong_array,
)
from ..session.tasks import run_task
from .errors import bounded_error
from .extensions import UNROUTED
from .redacting import masked_line

log = logging.getLogger(__name__)

CHUNK = 1 << 20
HANG_UP_GRACE = 5.0
"""Seconds a send may wait for stdout once the client is gone (stdin ended)."""
_TOO_LONG = object()

_ANSWERING: ContextVar[tuple[StdioTransport, int | str] | None] = ContextVar(
    "acp_answering", default=None
)
"""The transport and id of the request this task serves (None: no request)."""


def after_response(work: Coroutine[Any, Any, None], *, name: str) -> bool:
    """Run ``work`` once the response to the request being served is written; never
    when it is an error or the client is gone. False (``work`` untouched) outside a
    request of a :class:`StdioTransport`."""
    answering = _ANSWERING.get()
    if answering is None:
        return False
    transport, msg_id = answering
    transport._after.setdefault(msg_id, []).append((work, name))
    return True


class _Stdout(asyncio.BaseProtocol):
    """Flow control of the stdout pipe, and its loss (the reader closed it)."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost: BaseException | None = None

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = exc or BrokenPipeError("stdout closed by the reader")
        self.writable.set()


async def stdio_transport() -> StdioTransport:
    """The process's stdin and stdout as a :class:`StdioTransport`."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    stdout = _Stdout()
    pipe, _ = await loop.connect_write_pipe(lambda: stdout, sys.stdout)
    return StdioTransport(reader, pipe, stdout)


class StdioTransport:
    """Newline-delimited JSON-RPC over a reader and a write pipe; see the module."""

    def __init__(
        self, reader: asyncio.StreamReader, pipe: asyncio.WriteTransport, stdout: _Stdout
    ) -> None:
        self._reader = reader
        self._pipe = pipe
        self._stdout = stdout
        self._buf = bytearray()
        self._gone = asyncio.Event()
        """The client is gone: stdout failed. ``receive`` ends."""
        self._ending = False
        """stdin ended or the connection closes: sends no longer wait for long."""
        self._after: dict[int | str, list[tuple[Coroutine[Any, Any, None], str]]] = {}
        """Work to start once the response to a request id is written."""
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the SDK's Transport

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                self._ending = True
                return None
            if line is _TOO_LONG:
                log.error("refused a line over %d bytes", LARGEST_MESSAGE)
                too_long = f"a message is over {LARGEST_MESSAGE} bytes"
                await self._refuse(None, INVALID_REQUEST, too_long)
                continue
            if not line.strip():
                continue
            message = await self._message(line)
            if message is not None:
                # The SDK makes the request's task from this context: it inherits this.
                is_request = "method" in message and is_id(message.get("id"))
                _ANSWERING.set((self, message["id"]) if is_request else None)
                return message

    async def send(self, message: dict[str, Any]) -> None:
        after = None
        if "method" not in message and is_id(message.get("id")):
            after = self._after.pop(message["id"], None)
        try:
            await self._write(message)
        finally:
            if after:
                self._start(after, answered="result" in message and not self._gone.is_set())

    def _start(self, after: list[tuple[Coroutine[Any, Any, None], str]], answered: bool) -> None:
        """Start what waited for a response (written by now: later writes follow it)."""
        for work, name in after:
            if answered:
                run_task(work, name=name, keep=self._tasks)
            else:
                work.close()

    async def _write(self, message: dict[str, Any]) -> None:
        if self._gone.is_set():
            return  # the connection is ending: nobody reads this any more
        if isinstance(message.get("error"), dict):
            message = {**message, "error": bounded_error(message["error"])}
        data = masked_line((json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))
        if self._pipe.is_closing() or self._stdout.lost is not None:
            self._hang_up(self._stdout.lost)
            return
        self._pipe.write(data)
        try:
            if self._ending:
                await asyncio.wait_for(self._stdout.writable.wait(), HANG_UP_GRACE)
            else:
                await self._stdout.writable.wait()
        except TimeoutError:
            self._hang_up(TimeoutError(f"stdout blocked for {HANG_UP_GRACE} s after stdin ended"))
            return
        if self._stdout.lost is not None:
            self._hang_up(self._stdout.lost)

    async def close(self) -> None:
        self._ending = True
        for after in self._after.values():
            self._start(after, answered=False)
        self._after.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._pipe.is_closing():
            return  # lost already: the reader closed stdout
        if self._gone.is_set():
            self._pipe.abort()
        else:
            self._pipe.close()  # what is buffered is still written

    # -- reading

    async def _message(self, line: bytes) -> dict[str, Any] | None:
        """The line's message for the SDK, or None when it was answered here."""
        try:
            message = json.loads(line.decode("utf-8"))  # ACP is UTF-8: no BOM sniffing
        except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError is a ValueError)
            log.warning("unparsable line %.200r: %s", line, exc)
            not_json = f"Parse error: the line is not JSON: {_reason(exc)}"
            await self._refuse(None, PARSE_ERROR, not_json)
            return None
        problem = invalid_message(message)
        if problem is not None:
            log.warning("invalid message %.200r: %s", line, problem)
            msg_id = message.get("id") if isinstance(message, dict) else None
            await self._refuse(msg_id if is_id(msg_id) else None, INVALID_REQUEST, problem)
            return None
        body = "params" if "method" in message else "result"
        overlong = overlong_array(message.get(body))
        if overlong is None:
            method = message.get("method")
            if method in UNROUTED:
                return {**message, "method": UNROUTED[method]}
            return message
        where, items = overlong
        problem = f"{where}: expected at most {MAX_LIST_ITEMS} items, got {items}"
        log.warning("refused %s: %s", message.get("method", "a response"), problem)
        if "method" not in message:
            # The client's answer to a request of ours: that request fails.
            return {"jsonrpc": "2.0", "id": message["id"], "error": _error(INVALID_PARAMS, problem)}
        if "id" in message:
            await self._refuse(message["id"], INVALID_PARAMS, problem)
        return None

    async def _line(self) -> Any:
        """The next line; ``_TOO_LONG`` for one over the limit, skipped; None at the end."""
        skipping = False
        searched = 0
        while True:
            end = self._buf.find(b"\n", searched)
            if end >= 0:
                line = _TOO_LONG if skipping else bytes(self._buf[:end])
                del self._buf[: end + 1]
                return line
            if len(self._buf) > LARGEST_MESSAGE:
                skipping = True
            if skipping:
                self._buf.clear()
            searched = len(self._buf)
            chunk = await self._read()
            if not chunk:
                if skipping:
                    return _TOO_LONG
                if self._buf:  # a last line without its newline
                    line, self._buf = bytes(self._buf), bytearray()
                    return line
                return None
            self._buf += chunk

    async def _read(self) -> bytes:
        """The next chunk of stdin; b"" at its end or once the client is gone."""
        if self._gone.is_set():
            return b""
        read = asyncio.ensure_future(self._reader.read(CHUNK))
        gone = asyncio.ensure_future(self._gone.wait())
        await asyncio.wait({read, gone}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if not read.done():
            read.cancel()
            return b""
        try:
            return read.result()
        except OSError as exc:  # stdin failed rather than ended: the same to us
            log.warning("reading stdin failed: %s", exc)
            return b""

    # -- answering here

    async def _refuse(self, msg_id: int | str | None, code: int, message: str) -> None:
        await self.send({"jsonrpc": "2.0", "id": msg_id, "error": _error(code, message)})

    def _hang_up(self, why: BaseException | None) -> None:
        if not self._gone.is_set():
            log.warning("the client is gone (%s): shutting down", why)
            self._gone.set()
            self._ending = True


def _error(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)[:200]
