"""A real loopback HTTP server that plays canned responses, for driving the
providers through their SDKs end to end.

Each request gets the next response in the list (the last one repeats). A
response is a function that writes to the request handler: a JSON status, an SSE
stream (optionally cut off), or a hang.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

Responder = Callable[["Handler"], None]


@attrs.define
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's naming)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.server.lock:
            self.server.received.append(Received("POST", self.path, headers, body))
            index = len(self.server.received) - 1
        responses = self.server.responses
        respond = responses[min(index, len(responses) - 1)]
        self.close_connection = True
        respond(self)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass  # the response deliberately cut the connection

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, responses: list[Responder]) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.responses = responses
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out and hang up are part of the tests

    def start(self) -> FakeServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # releases hanging responders
        self.shutdown()
        self.server_close()


# -- responders


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Responder:
    def respond(handler: Handler) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    return respond


def sse(
    events: list[str],
    *,
    cut: bool = False,
    hang_at_end: bool = False,
    delay: float = 0.0,
) -> Responder:
    """An event stream, chunked. ``cut``: the connection drops after the events,
    mid-body. ``hang_at_end``: it stalls there instead."""

    def respond(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for event in events:
            data = event.encode()
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            handler.wfile.flush()
            if delay:
                handler.server.stopping.wait(delay)
        if hang_at_end:
            handler.server.stopping.wait(30)
        if cut:
            handler.wfile.flush()
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        handler.wfile.write(b"0\r\n\r\n")

    return respond


def hang(handler: Handler) -> None:
    handler.server.stopping.wait(30)


# -- the OpenAI chat-completions stream


def openai_chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    usage: tuple[int, int] | None = None,
    cost: float | None = None,
) -> str:
    """One stream chunk; ``cost`` goes in the usage, as a LiteLLM proxy sends it."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [],
    }
    if delta is not None or finish is not None:
        chunk["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        chunk["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
        if cost is not None:
            chunk["usage"]["cost"] = cost
    return f"data: {json.dumps(chunk)}\n\n"


OPENAI_DONE = "data: [DONE]\n\n"


def tool_fragment(
    index: int,
    *,
    id: str | None = None,
    name: str | None = None,  # noqa: A002
    arguments: str | None = None,
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "type": "function", "function": {}}
    if id is not None:
        fragment["id"] = id
    if name is not None:
        fragment["function"]["name"] = name
    if arguments is not None:
        fragment["function"]["arguments"] = arguments
    return {"tool_calls": [fragment]}


# -- the Anthropic messages stream


def anthropic_event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def anthropic_message_start(input_tokens: int, **usage: int) -> str:
    return anthropic_event(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage},
        },
    )


def keep_alive(events: list[str], *, every: float = 0.2, lasting: float = 30.0) -> Responder:
    """The events, then an SSE comment line -- a keep-alive, which the SDKs skip --
    every ``every`` seconds for ``lasting`` seconds, then the end of the body."""

    def respond(handler: Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        comment = b": keep-alive\n\n"
        chunks = [event.encode() for event in events]
        chunks += [comment] * int(lasting / every)
        try:
            for i, data in enumerate(chunks):
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                handler.wfile.flush()
                if i >= len(events) - 1 and handler.server.stopping.wait(every):
                    return
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            return  # the client gave up and hung up: what the tests want

    return respond
