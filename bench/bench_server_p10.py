"""P10: the time from ``session/send`` on a resumed 10,000-turn session to its model
request leaving the process, measured where it arrives: a loopback HTTP server in this
process speaking the OpenAI chat-completions protocol (streamed), which notes when each
request's body has been read whole. Against the floor: the same request's bytes posted
by a bare ``http.client`` in this process, and a ``session/send`` on a one-turn session.

The session is what a long-lived agent leaves: 10,000 turns (prompt, ``read_file`` call,
1 KB result, answer, turn end), compacted every 200 turns as auto-compaction would, so
the model is sent the last summary and at most 200 turns (~80,000 tokens, under
the 0.8 x 128,000 at which auto-compaction would start). Built through the store API,
resumed once in this process so it has its resume snapshot.

Each spawn: initialize, one warm-up turn on a small session (the first model call of a
process imports the openai SDK and opens its client: a one-off, reported apart), then
``session/resume`` of the long session and the timed ``session/send``.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench_server_common import AGENT_CMD, Row, Samples, fmt, spawn_and_initialize
from bench_server_p8 import _tool_output
from bench_server_p8 import turn_events as p8_turn

from agent_host.session import open_store
from agent_host.session.events import Compaction, TurnEnd
from agent_host.session.state import SessionState

TURNS = 10_000
COMPACT_EVERY = 200
LONG_ID = "20250101-000000-p10long0"
SMALL_ID = "20250101-000000-p10small"
WARM_ID = "20250101-000000-p10warm0"

_CHUNKS = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}},
]
_STREAM = (
    b"".join(
        b"data: %s\n\n"
        % json.dumps(
            {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", **c}
        ).encode()
        for c in _CHUNKS
    )
    + b"data: [DONE]\n\n"
)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Loopback

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's naming)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        arrived = time.perf_counter()
        self.server.arrivals.append((arrived, len(body), body if self.server.keep else b""))
        self.server.arrived.set()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(_STREAM)))
        self.end_headers()
        self.wfile.write(_STREAM)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class Loopback(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.arrivals: list[tuple[float, int, bytes]] = []
        self.arrived = threading.Event()
        self.keep = False
        threading.Thread(target=self.serve_forever, args=(0.01,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def wait(self, count: int) -> tuple[float, int, bytes]:
        deadline = time.monotonic() + 60
        while len(self.arrivals) < count:
            self.arrived.wait(0.05)
            self.arrived.clear()
            if time.monotonic() > deadline:
                raise TimeoutError("no model request arrived")
        return self.arrivals[count - 1]


def _turn(i: int, output: str) -> list:
    return [*p8_turn(i, output), TurnEnd(stop_reason="end_turn")]


async def build(store_dir: Path) -> int:
    """The long session (compacted every COMPACT_EVERY turns), a one-turn one and the
    warm-up one; the long log's size."""
    store = open_store(str(store_dir))
    output = _tool_output(1024)
    try:
        head = 0
        for start in range(0, TURNS, COMPACT_EVERY):
            events = [e for i in range(start, start + COMPACT_EVERY) for e in _turn(i, output)]
            if start:
                # What auto-compaction leaves before the next turn: one summary of all before.
                events.insert(
                    0,
                    Compaction(
                        summary=f"Turns 0-{start - 1}: fixed KeyErrors.",
                        first_seq=1,
                        last_seq=head,
                        tokens_before=0,
                        tokens_after=0,
                    ),
                )
            head = await store.append(LONG_ID, events)
        for sid in (SMALL_ID, WARM_ID):
            await store.append(sid, _turn(0, output))
        for sid in (LONG_ID, SMALL_ID):
            state = SessionState(store, sid)
            await state.refresh(full=False)  # folds the log once and writes its snapshot
    finally:
        await store.close()
    return (store_dir / "sessions" / f"{LONG_ID}.jsonl").stat().st_size


def _post_floor(url: str, body: bytes) -> tuple[float, http.client.HTTPConnection]:
    """A bare client posting ``body``: the request's own cost on this machine."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(host, int(port))
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    return t0, conn


def bench_send_latency(work: Path, runs: int) -> list[Row]:
    store_dir = work / "p10-store"
    size = asyncio.run(build(store_dir))
    loop = Loopback()
    os.environ["OPENAI_BASE_URL"] = loop.url
    os.environ["OPENAI_API_KEY"] = "bench-not-a-key"
    options = {"store": str(store_dir), "model": "openai/gpt-4.1-mini", "approval": "auto"}
    long, small, first, floor = Samples(), Samples(), Samples(), Samples()
    sizes: list[int] = []
    loop.keep = True
    for i in range(runs):
        child, _ = spawn_and_initialize(AGENT_CMD, work, f"p10-{i}", options)
        try:
            count = len(loop.arrivals)
            t0 = time.perf_counter()
            child.result(child.request("session/send", {"sessionId": WARM_ID, "prompt": "hi"}))
            first.values.append((loop.wait(count + 1)[0] - t0) * 1e3)
            for sid, out in ((LONG_ID, long), (SMALL_ID, small)):
                child.result(child.request("session/resume", {"sessionId": sid}))
                count = len(loop.arrivals)
                t0 = time.perf_counter()
                msg = child.request("session/send", {"sessionId": sid, "prompt": f"next {i}"})
                arrived, length, body = loop.wait(count + 1)
                out.values.append((arrived - t0) * 1e3)
                child.result(msg)
                if sid == LONG_ID:
                    sizes.append(length)
                    count = len(loop.arrivals)
                    t0, conn = _post_floor(loop.url, body)
                    floor.values.append((loop.wait(count + 1)[0] - t0) * 1e3)
                    conn.getresponse().read()
                    conn.close()
        finally:
            child.close()
    loop.shutdown()
    messages = len(json.loads(loop.arrivals[-3][2])["messages"])  # the last long send's
    return [
        Row(
            f"send on a resumed {TURNS:,}-turn session",
            long,
            "ms",
            floor,
            "bare POST",
            max_value=20,
            note=(
                f"log {size / 2**20:.1f} MiB ({TURNS * 5:,} events, compacted every "
                f"{COMPACT_EVERY} turns); request {sizes[-1] / 1e3:.0f} KB, {messages} "
                "messages; from the send's write to the request's last byte read"
            ),
        ),
        Row("  the same request by a bare http.client (floor)", floor, "ms"),
        Row("  send on a resumed one-turn session", small, "ms"),
        Row(
            "  first send of a process (warm-up, one-off)",
            first,
            "ms",
            note="imports the openai SDK and opens its client: "
            f"{fmt(first.median - small.median, 'ms')} over a warm send",
        ),
    ]
