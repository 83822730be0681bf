"""P6: relay of 100,000 text deltas through one session/send, against a writer that
only writes the same frames."""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_server_common import (
    AGENT_CMD,
    TIMEOUT,
    Child,
    Row,
    Samples,
    spawn_and_initialize,
)

from agent_host.session.providers.scripted import WORDS_PER_DELTA, text_chunks

DELTAS = 100_000

_WORDS = (
    "the model reads the file and then writes a short answer about what it found in "
    "each function while the user waits for the next token to arrive over stdio"
).split()


def relay_text() -> str:
    """300,000 words: the scripted provider streams them as 100,000 deltas."""
    n = DELTAS * WORDS_PER_DELTA
    return " ".join(_WORDS[i % len(_WORDS)] for i in range(n))


# A child that only writes: it reads one framed request, builds every notification as
# pygls would frame it (same header, same json.dumps), then writes them one per write
# (mode "each", as the server does: write + flush per message) or all at once ("bulk"),
# and last the request's result, carrying the whole text as the real one does.
WRITER = r"""
import json, os, re, sys
script, sid, mode = sys.argv[1:4]
HEADER = "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
def framed(obj):
    body = json.dumps(obj)
    return (HEADER.format(len(body)) + body).encode("utf-8")
fd = sys.stdin.buffer.raw
head = b""
while b"\r\n\r\n" not in head:
    head += fd.read(1)
n = int(re.search(rb"Content-Length: *(\d+)", head).group(1))
body = b""
while len(body) < n:
    body += fd.read(n - len(body))
msg_id = json.loads(body)["id"]
text = json.load(open(script))["steps"][0]["text"]
words = re.findall(r"\s*\S+\s*", text)
chunks = ["".join(words[i:i + 3]) for i in range(0, len(words), 3)]
frames = [framed({"jsonrpc": "2.0", "method": "session/event", "params": {
    "sessionId": sid, "kind": "text_delta", "data": {"text": c}}}) for c in chunks]
frames.append(framed({"jsonrpc": "2.0", "id": msg_id, "result": {
    "sessionId": sid, "checkpoint": 2, "stopReason": "end_turn", "text": text,
    "usage": {"inputTokens": 1, "outputTokens": 1}, "cost": 0.0, "totalCost": 0.0}}))
out = sys.stdout.buffer
if mode == "bulk":
    out.write(b"".join(frames)); out.flush()
else:
    for f in frames:
        out.write(f); out.flush()
sys.stdin.buffer.read()
"""

SESSION_ID = "20250101-000000-bench000"


@dataclass
class Relay:
    deltas: int
    chars: int
    first: float  # seconds from the send to the first delta
    last: float  # seconds from the send to the last delta
    total: float  # seconds from the send to the result
    others: int  # other session/event notifications

    @property
    def rate(self) -> float:
        """Deltas per second from the first delta to the send's result."""
        return self.deltas / (self.total - self.first)

    @property
    def stream_rate(self) -> float:
        """Deltas per second from the first delta to the last."""
        return (self.deltas - 1) / (self.last - self.first)


def relay_hand(
    cmd: list[str], work: Path, name: str, options: dict | None, is_server: bool
) -> Relay:
    """Our framed reader: every notification parsed, text deltas counted."""
    if is_server:
        child, _ = spawn_and_initialize(cmd, work, name, options)
    else:
        child = Child(cmd, work, name)
    count = chars = others = 0
    first = last = 0.0
    try:
        t0 = time.perf_counter()
        msg_id = child.request("session/send", {"prompt": "go", "sessionId": SESSION_ID})
        reader = child.out
        while True:
            message = reader.read()
            if message.get("method") == "session/event":
                params = message["params"]
                if params["kind"] == "text_delta":
                    last = time.perf_counter()
                    if not count:
                        first = last
                    count += 1
                    chars += len(params["data"]["text"])
                else:
                    others += 1
            elif message.get("id") == msg_id:
                total = time.perf_counter()
                if "error" in message:
                    raise RuntimeError(f"session/send failed: {message['error']}")
                break
    finally:
        child.close(polite=is_server)
    return Relay(count, chars, first - t0, last - t0, total - t0, others)


async def _relay_pygls(cmd: list[str], work: Path, options: dict | None, is_server: bool) -> Relay:
    from lsprotocol import types as lsp
    from pygls.lsp.client import LanguageClient

    from agent_host.server.protocol import plain_params_converter

    client = LanguageClient("bench", "0", converter_factory=plain_params_converter)
    state = {"count": 0, "chars": 0, "others": 0, "first": 0.0, "last": 0.0}

    @client.feature("session/event")
    def on_event(params: dict[str, Any]) -> None:
        if params["kind"] == "text_delta":
            state["last"] = time.perf_counter()
            if not state["count"]:
                state["first"] = state["last"]
            state["count"] += 1
            state["chars"] += len(params["data"]["text"])
        else:
            state["others"] += 1

    await client.start_io(*cmd, cwd=work)
    try:
        if is_server:
            await client.initialize_async(
                lsp.InitializeParams(
                    capabilities=lsp.ClientCapabilities(),
                    root_uri=(work / "ws").as_uri(),
                    initialization_options=options,
                )
            )
            client.initialized(lsp.InitializedParams())
        t0 = time.perf_counter()
        await asyncio.wait_for(
            client.protocol.send_request_async(
                "session/send", {"prompt": "go", "sessionId": SESSION_ID}
            ),
            TIMEOUT,
        )
        total = time.perf_counter()
    finally:
        if is_server:
            await asyncio.wait_for(client.shutdown_async(None), 30)
            client.exit(None)
        elif client._server is not None:
            client._server.kill()
        await client.stop()
    return Relay(
        state["count"],
        state["chars"],
        state["first"] - t0,
        state["last"] - t0,
        total - t0,
        state["others"],
    )


def relay_pygls(
    cmd: list[str], work: Path, name: str, options: dict | None, is_server: bool
) -> Relay:
    return asyncio.run(_relay_pygls(cmd, work, options, is_server))


def bench_relay(work: Path, runs: int, with_pygls: bool) -> list[Row]:
    text = relay_text()
    expected = len(text_chunks(text))
    assert expected == DELTAS, expected
    script = work / "p6-script.json"
    script.write_text(json.dumps({"steps": [{"text": text, "delay_ms": 0}]}))
    model = f"scripted:{script}"

    def server_options(i: int) -> dict:
        return {"store": str(work / f"p6-store-{i}"), "model": model, "approval": "auto"}

    writer = lambda mode: [sys.executable, "-c", WRITER, str(script), SESSION_ID, mode]  # noqa: E731
    contenders: list[tuple[str, Callable, list[str], bool]] = [
        ("relay", relay_hand, AGENT_CMD, True),
        ("floor", relay_hand, writer("each"), False),
        ("bulk", relay_hand, writer("bulk"), False),
    ]
    if with_pygls:
        contenders += [
            ("pygls relay", relay_pygls, AGENT_CMD, True),
            ("pygls floor", relay_pygls, writer("each"), False),
        ]
    relays: dict[str, list[Relay]] = {name: [] for name, *_ in contenders}
    n = len(contenders)
    counter = 0
    for it in range(runs):
        k = it % n
        for name, run, cmd, is_server in contenders[k:] + contenders[:k]:
            counter += 1
            gc.collect()
            result = run(cmd, work, f"p6-{counter}", server_options(counter), is_server)
            if result.deltas != DELTAS or result.chars != len(text):
                raise RuntimeError(
                    f"{name}: {result.deltas} deltas, {result.chars} chars; expected "
                    f"{DELTAS}, {len(text)}"
                )
            relays[name].append(result)

    def rate(name: str) -> Samples:
        return Samples([r.rate for r in relays[name]], higher_is_better=True)

    def detail(name: str, server: bool) -> str:
        runs_ = relays[name]
        stream = statistics.median(r.stream_rate for r in runs_)
        tail = statistics.median(r.total - r.last for r in runs_) * 1e3
        spread = ", ".join(f"{r.rate:,.0f}" for r in runs_)
        text = (
            f"first -> last delta {stream:,.0f} /s, last delta -> result {tail:.0f} ms; "
            f"each run: {spread} /s"
        )
        if server:
            total = statistics.median(r.total for r in runs_)
            first = statistics.median(r.first for r in runs_) * 1e3
            text += f"\nsend -> first delta {first:.0f} ms, send -> result {total:.2f} s"
        return text

    rows = [
        Row(
            "relay, our framed reader (deltas/s)",
            rate("relay"),
            "/s",
            rate("floor"),
            "floor",
            min_value=20_000,
            note=detail("relay", True),
        ),
        Row(
            "floor: writer, one write per message", rate("floor"), "/s", note=detail("floor", False)
        ),
        Row(
            "floor: writer, one write of everything", rate("bulk"), "/s", note=detail("bulk", False)
        ),
    ]
    if with_pygls:
        rows += [
            Row(
                "relay, pygls LanguageClient (extra)",
                rate("pygls relay"),
                "/s",
                rate("pygls floor"),
                "pygls floor",
                note=detail("pygls relay", True),
            ),
            Row(
                "floor, pygls LanguageClient (extra)",
                rate("pygls floor"),
                "/s",
                note=detail("pygls floor", False),
            ),
        ]
    return rows
