"""A loopback OpenAI Responses API: ``POST /v1/responses`` answers ``echo: <the
last user text>``, so the real SDK's ``Runner.run`` drives a real HTTP model.

``meet`` (a count) holds each request until that many are in flight at once, so a
test knows its runs reached the model together, not one after the other."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def last_user_text(items: object) -> str:
    if isinstance(items, str):
        return items
    for item in reversed(items if isinstance(items, list) else []):
        if item.get("role") == "user":
            content = item["content"]
            return content if isinstance(content, str) else content[0].get("text", "")
    return ""


class Responses:
    def __init__(self, meet: int = 0) -> None:
        self.barrier = threading.Barrier(meet, timeout=30) if meet else None
        self.seen: list[str] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def answer(self, request: dict) -> dict:
        text = last_user_text(request.get("input"))
        with self._lock:
            self.seen.append(text)
            number = next(self._ids)
        if self.barrier is not None:
            self.barrier.wait()
        return {
            "id": f"resp_{number}",
            "object": "response",
            "created_at": int(time.time()),
            "model": request.get("model", "loopback"),
            "status": "completed",
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "id": f"msg_{number}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": f"echo: {text}", "annotations": []}
                    ],
                }
            ],
            "usage": {
                "input_tokens": 1,
                "output_tokens": 1,
                "total_tokens": 2,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }


@contextmanager
def serve(responses: Responses) -> Iterator[str]:
    """The server's base URL (``http://127.0.0.1:PORT/v1``) while the block runs."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(responses.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
