#!/usr/bin/env python
"""Server benchmarks: ``agent-host serve`` over stdio, against a bare pygls server and the pipe.

    python bench/bench_server.py            # full run (~4 min on a quiet machine)
    python bench/bench_server.py --quick    # fewer spawns and relays (~1.5 min)
    python bench/bench_server.py --only p5,p8 --dir D

P5  cold start: spawn ``[sys.executable, "-m", "agent_host", "serve"]``, send a framed
    ``initialize`` at once, time until its result is read; against a bare pygls 2
    ``LanguageServer("bare", "0")`` with no features, started and timed the same way.
    Round robin. On a miss: ``-X importtime`` of both, and what only agent-host imports.
P6  relay: one ``session/send`` whose scripted step streams 100,000 text deltas, read
    by a stdio client; deltas/s from the first delta to the send's result. Against the
    client-side floor: a ``python -c`` child that only writes 100,000 pre-framed
    notifications of the same bytes. Two clients: a hand-rolled framed reader (the
    target rows) and pygls's ``LanguageClient`` with a ``session/event`` feature.
P8  memory: VmRSS (/proc/<pid>/status) of an idle server after initialize (every P5
    spawn, both servers), and before/after ``session/resume`` of a 100,000-event session
    built beforehand through the store API.

Each server gets its own store folder under one run directory (default: a folder in the
temp dir when that is on the repo's filesystem, else beside the repo). See
docs/performance.md ("Server") for a reading.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_host.session import open_store
from agent_host.session.events import AssistantMessage, ToolCall, ToolResult, UserPrompt
from agent_host.session.providers.scripted import WORDS_PER_DELTA, text_chunks

REPO = Path(__file__).resolve().parent.parent
AGENT_CMD = [sys.executable, "-m", "agent_host", "serve"]
BARE_SERVER = (
    'from pygls.lsp.server import LanguageServer\nLanguageServer("bare", "0").start_io()\n'
)
DELTAS = 100_000
RESUME_TURNS = 25_000  # x 4 events = 100,000
TIMEOUT = 300.0  # seconds any one child may live

# The header pygls writes before every body (server.protocol._send_data).
PYGLS_HEADER = (
    "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
)

# --------------------------------------------------------------------------- framing


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


_CONTENT_LENGTH = re.compile(rb"Content-Length: *(\d+)", re.IGNORECASE)


class FramedReader:
    """LSP-framed messages from a pipe: blocking ``os.read`` of up to 1 MB, one
    ``orjson.loads`` per body. The least a Python client can do per message."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""
        self.pos = 0

    def read(self) -> dict[str, Any]:
        buf, pos = self.buf, self.pos
        while True:
            end = buf.find(b"\r\n\r\n", pos)
            if end >= 0:
                match = _CONTENT_LENGTH.search(buf, pos, end)
                if match is None:
                    raise ValueError(f"no Content-Length in {buf[pos:end]!r}")
                start = end + 4
                stop = start + int(match.group(1))
                if stop <= len(buf):
                    self.pos = stop
                    return orjson.loads(buf[start:stop])
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise EOFError("the other end closed its stdout")
            buf = self.buf = buf[pos:] + chunk
            pos = self.pos = 0


# --------------------------------------------------------------------------- children


class Child:
    """A server (or writer) as a child process on pipes; stderr goes to a file."""

    def __init__(self, cmd: list[str], work: Path, name: str) -> None:
        self.err_path = work / f"{name}.stderr"
        self._err = open(self.err_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, cwd=work
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.out = FramedReader(self.proc.stdout.fileno())
        self.in_fd = self.proc.stdin.fileno()
        self._watchdog = threading.Timer(TIMEOUT, self.proc.kill)
        self._watchdog.daemon = True
        self._watchdog.start()
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict[str, Any]) -> None:
        data = frame(message)
        while data:
            data = data[os.write(self.in_fd, data) :]

    def request(self, method: str, params: Any) -> int:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def result(self, msg_id: int, on_other: Callable[[dict], None] | None = None) -> Any:
        """Read until the response to ``msg_id``; other messages go to ``on_other``
        (server-to-client requests are answered with null)."""
        while True:
            try:
                message = self.out.read()
            except EOFError:
                raise RuntimeError(f"server exited: {self.stderr_tail()}") from None
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"request {msg_id} failed: {message['error']}")
                return message.get("result")
            if "id" in message and "method" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif on_other is not None:
                on_other(message)

    def cpu_ms(self) -> float:
        """user + system CPU time of the process so far (all threads), from /proc/<pid>/stat;
        the kernel counts it in clock ticks (10 ms here)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf("SC_CLK_TCK")

    def rss_kib(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) in KiB, from /proc/<pid>/status."""
        found: dict[str, int] = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    found[key] = int(rest.split()[0])
        return found["VmRSS"], found["VmHWM"]

    def stderr_tail(self, lines: int = 15) -> str:
        try:
            text = self.err_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self, polite: bool = True) -> None:
        """shutdown + exit (when ``polite``), then wait; kill what lingers."""
        try:
            if polite and self.proc.poll() is None:
                self.result(self.request("shutdown", None))
                self.notify("exit", None)
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=10)
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            self._watchdog.cancel()
            self.proc.stdout.close()  # type: ignore[union-attr]
            self._err.close()


def initialize_params(root: Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "processId": os.getpid(),
        "clientInfo": {"name": "bench_server", "version": "0"},
        "rootUri": root.as_uri(),
        "capabilities": {},
    }
    if options is not None:
        params["initializationOptions"] = options
    return params


# --------------------------------------------------------------------------- stats and table


@dataclass
class Samples:
    values: list[float] = field(default_factory=list)
    higher_is_better: bool = False

    def q(self, frac: float) -> float:
        s = sorted(self.values)
        return s[min(len(s) - 1, round(frac * (len(s) - 1)))]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def slow(self) -> float:
        """The bad-side 90th percentile: p90 of times and sizes, p10 of rates."""
        return self.q(0.1 if self.higher_is_better else 0.9)


@dataclass
class Row:
    name: str
    samples: Samples
    unit: str  # "ms", "/s", "MiB"
    ref: Samples | None = None
    ref_label: str = ""
    max_ratio: float | None = None  # target: median <= max_ratio x ref median
    max_value: float | None = None  # target: median <= max_value
    min_value: float | None = None  # target: median >= min_value
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.samples.median / self.ref.median if self.ref else None

    def targets(self) -> list[tuple[str, bool]]:
        out = []
        if self.max_ratio is not None and self.ratio is not None:
            out.append((f"<= {self.max_ratio:g}x {self.ref_label}", self.ratio <= self.max_ratio))
        if self.max_value is not None:
            label = f"<= {fmt(self.max_value, self.unit)}"
            out.append((label, self.samples.median <= self.max_value))
        if self.min_value is not None:
            label = f">= {fmt(self.min_value, self.unit)}"
            out.append((label, self.samples.median >= self.min_value))
        return out


RESULTS: list[tuple[str, list[Row]]] = []


def fmt(value: float, unit: str) -> str:
    if unit == "/s":
        return f"{value:,.0f} /s"
    if unit == "MiB":
        return f"{value:+.1f} MiB" if value < 0 else f"{value:.1f} MiB"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:.1f} ms" if value < 1000 else f"{value:,.0f} ms"


def print_section(title: str, rows: list[Row]) -> None:
    head = (
        f"{'benchmark':<46} {'median':>12} {'p90*':>12} {'n':>3}  "
        f"{'ratio':<20} {'target':<20} result"
    )
    print(f"\n{title}")
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = f"{r.ratio:.2f}x {r.ref_label}" if r.ratio is not None else ""
        targets = r.targets()
        result = ""
        if targets:
            result = "PASS" if all(ok for _, ok in targets) else "MISS"
        line = (
            f"{r.name:<46} {fmt(r.samples.median, r.unit):>12} {fmt(r.samples.slow, r.unit):>12} "
            f"{len(r.samples.values):>3}  {ratio:<20} {', '.join(t for t, _ in targets):<20} "
            f"{result}"
        )
        print(line.rstrip())
        if r.note:
            for line in r.note.splitlines():
                print(f"{'':<4}{line}")


# --------------------------------------------------------------------------- P5


def spawn_and_initialize(
    cmd: list[str], work: Path, name: str, options: dict[str, Any] | None = None
) -> tuple[Child, float]:
    """Spawn, send initialize at once, read its result: (child, seconds)."""
    root = work / "ws"
    t0 = time.perf_counter()
    child = Child(cmd, work, name)
    msg_id = child.request("initialize", initialize_params(root, options))
    child.result(msg_id)
    elapsed = time.perf_counter() - t0
    child.notify("initialized", {})
    return child, elapsed


def bench_cold_start(work: Path, spawns: int) -> tuple[list[Row], dict[str, Samples]]:
    bare_script = work / "bare_server.py"
    bare_script.write_text(BARE_SERVER)
    bare_cmd = [sys.executable, str(bare_script)]
    contenders = {
        "agent": (AGENT_CMD, lambda i: {"store": str(work / f"p5-store-{i}")}),
        "bare": (bare_cmd, lambda i: None),
    }
    times = {k: Samples() for k in contenders}
    cpu = {k: Samples() for k in contenders}
    rss = {k: Samples() for k in contenders}
    names = list(contenders)
    for it in range(1 + spawns):  # the first round warms the page cache and the pycs
        k = it % len(names)
        for name in names[k:] + names[:k]:
            cmd, options = contenders[name]
            child, elapsed = spawn_and_initialize(cmd, work, f"p5-{name}", options(it))
            try:
                used = child.cpu_ms()
                time.sleep(0.2)  # idle: the initialized notification handled, nothing else
                resident, _ = child.rss_kib()
            finally:
                child.close()
            if it:
                times[name].values.append(elapsed * 1e3)
                cpu[name].values.append(used)
                rss[name].values.append(resident / 1024)
    fastest = {k: min(v.values) for k, v in times.items()}
    rows = [
        Row(
            "agent-host serve: spawn -> initialize result",
            times["agent"],
            "ms",
            times["bare"],
            "bare",
            max_ratio=1.3,
            note=f"fastest spawns: {fastest['agent']:.0f} ms against {fastest['bare']:.0f} ms, "
            f"{fastest['agent'] / fastest['bare']:.2f}x",
        ),
        Row("bare pygls LanguageServer (floor)", times["bare"], "ms"),
        Row(
            "  CPU time to the result, agent-host (extra)",
            cpu["agent"],
            "ms",
            cpu["bare"],
            "bare",
            note="user+sys of the child from /proc/<pid>/stat (10 ms ticks): "
            "less moved by other tenants than wall time",
        ),
        Row("  CPU time to the result, bare (extra)", cpu["bare"], "ms"),
    ]
    return rows, rss


def importtime(
    commands: dict[str, list[str]], work: Path, runs: int = 3
) -> dict[str, dict[str, tuple[float, float, int]]]:
    """``-X importtime`` of spawn + initialize + shutdown, the commands interleaved:
    per command, module -> (self ms, cumulative ms, depth), each the least of ``runs``
    runs (the run least disturbed by other work on the machine)."""
    seen: dict[str, dict[str, list[tuple[int, int, int]]]] = {k: {} for k in commands}
    for i in range(runs):
        for key, cmd in commands.items():
            child = Child([cmd[0], "-X", "importtime", *cmd[1:]], work, f"importtime-{key}-{i}")
            child.result(
                child.request(
                    "initialize",
                    initialize_params(work / "ws", {"store": str(work / "importtime-store")}),
                )
            )
            child.close()
            for line in child.err_path.read_text().splitlines():
                if not line.startswith("import time:") or "[us]" in line:
                    continue
                own, cum, name = line[len("import time:") :].split("|")
                depth = (len(name) - len(name.lstrip(" "))) // 2
                seen[key].setdefault(name.strip(), []).append((int(own), int(cum), depth))
    return {
        key: {
            name: (min(v[0] for v in vals) / 1e3, min(v[1] for v in vals) / 1e3, vals[0][2])
            for name, vals in modules.items()
        }
        for key, modules in seen.items()
    }


def importtime_report(work: Path, bare_cmd: list[str]) -> str:
    found = importtime({"agent": AGENT_CMD, "bare": bare_cmd}, work)
    agent, bare = found["agent"], found["bare"]
    lines = [
        "python -X importtime -m agent_host serve (spawn, initialize, shutdown; "
        "least of 3 runs, interleaved with the bare server's):"
    ]
    lines.append(f"  {'cumulative ms':>13} {'self ms':>8}  module (indented under its importer)")
    # The tree's heaviest branches: every module of >= 10 ms cumulative. importtime lists a
    # module after the ones it imports; reversed, each importer comes before its imports.
    for name in reversed(list(agent)):
        own, cum, depth = agent[name]
        if cum >= 10 and depth <= 4:
            lines.append(f"  {cum:>13.1f} {own:>8.1f}  {'  ' * depth}{name}")
    only: dict[str, float] = {}
    for name, (own, _, _) in agent.items():
        if name not in bare:
            top = (
                name.split(".")[0]
                if not name.startswith("agent_host")
                else ".".join(name.split(".")[:3])
            )
            only[top] = only.get(top, 0.0) + own
    total_only = sum(only.values())
    total_agent = sum(v[0] for v in agent.values())
    total_bare = sum(v[0] for v in bare.values())
    lines.append(
        f"self time of all imports: agent-host {total_agent:.0f} ms, bare pygls "
        f"{total_bare:.0f} ms; modules only agent-host imports: {total_only:.0f} ms, by package:"
    )
    for top, ms in sorted(only.items(), key=lambda kv: -kv[1])[:20]:
        if ms >= 2:
            lines.append(f"  {ms:>8.1f} ms  {top}")
    shared = sorted(((n, v[0]) for n, v in bare.items()), key=lambda kv: -kv[1])[:3]
    lines.append(
        "heaviest imports the bare server shares: "
        + ", ".join(f"{n} {ms:.0f} ms self" for n, ms in shared)
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- P6

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


# The server under cProfile for one relay: the profile is written when start_io returns
# (after exit), or if the server is killed, never.
PROFILED_SERVER = r"""
import cProfile, sys
from agent_host.server.app import create_server
profile = cProfile.Profile()
profile.enable()
try:
    create_server().start_io()
finally:
    profile.disable()
    profile.dump_stats(sys.argv[1])
"""


def notify_cost(repeats: int = 3, n: int = 50_000) -> dict[str, float]:
    """CPU per text delta in this process, writer discarding the bytes (no syscall):
    the server's relay as it is, and the same notification framed directly."""
    from pygls.io_ import StdoutWriter

    from agent_host.server.app import create_server
    from agent_host.session.model import TextDelta

    class Null:
        def write(self, data: bytes) -> None:
            pass

        def flush(self) -> None:
            pass

    server = create_server()
    server.protocol.set_writer(StdoutWriter(Null()))
    deltas = [TextDelta("the model reads ") for _ in range(n)]
    writer = StdoutWriter(Null())
    header = PYGLS_HEADER.encode().replace(b"{}", b"%d")

    def relay() -> None:
        for d in deltas:
            server.relay(SESSION_ID, d)

    def direct_orjson() -> None:
        for d in deltas:
            params = {"sessionId": SESSION_ID, "kind": "text_delta", "data": {"text": d.text}}
            body = orjson.dumps({"jsonrpc": "2.0", "method": "session/event", "params": params})
            writer.write(header % len(body) + body)

    def direct_json() -> None:
        for d in deltas:
            params = {"sessionId": SESSION_ID, "kind": "text_delta", "data": {"text": d.text}}
            body = json.dumps({"jsonrpc": "2.0", "method": "session/event", "params": params})
            writer.write((PYGLS_HEADER.format(len(body)) + body).encode())

    out: dict[str, list[float]] = {}
    for _ in range(repeats):
        for name, fn in (("relay", relay), ("orjson", direct_orjson), ("json", direct_json)):
            t0 = time.perf_counter()
            fn()
            out.setdefault(name, []).append((time.perf_counter() - t0) / n * 1e6)
    return {k: statistics.median(v) for k, v in out.items()}


def relay_report(work: Path) -> str:
    import pstats

    script = work / "p6-script.json"
    server = work / "profiled_server.py"
    server.write_text(PROFILED_SERVER)
    prof = work / "relay.prof"
    options = {"store": str(work / "p6-store-profiled"), "model": f"scripted:{script}"}
    profiled = relay_hand(
        [sys.executable, str(server), str(prof)], work, "p6-profiled", options, True
    )
    stats = pstats.Stats(str(prof)).stats  # type: ignore[attr-defined]

    def cum(file_end: str, func: str) -> float:
        return sum(v[3] for k, v in stats.items() if k[0].endswith(file_end) and k[2] == func)

    def own(func: str) -> float:
        return sum(v[2] for k, v in stats.items() if k[2] == func)

    turn = cum("session/turn.py", "_call_model")
    parts = [
        ("AgentServer.relay (app.py)", cum("server/app.py", "relay")),
        ("  pygls JsonRPCProtocol.notify", cum("protocol/json_rpc.py", "notify")),
        ("    json.dumps of the notification", cum("json/__init__.py", "dumps")),
        (
            "      of which cattrs unstructure via default=",
            cum("json_rpc.py", "_serialize_message"),
        ),
        (
            "    write + flush (one write(2) per message)",
            own("<method 'write' of '_io.FileIO' objects>"),
        ),
        ("scripted provider (_turn/_play)", cum("providers/scripted.py", "_turn")),
    ]
    costs = notify_cost()
    lines = [
        f"Where the server's time goes in the relay: cProfile of one relay "
        f"({profiled.rate:,.0f} deltas/s under the profiler; it inflates call-heavy code), "
        f"share of _Turn._call_model's {turn:.2f} s:",
    ]
    for label, seconds in parts:
        lines.append(f"  {seconds / turn:6.1%}  {seconds:6.2f} s  {label}")
    lines.append(
        "CPU per delta in-process, writer discarding the bytes (no profiler, no syscall): "
        f"AgentServer.relay {costs['relay']:.1f} us; the same bytes via stdlib json.dumps "
        f"of a dict {costs['json']:.1f} us; via orjson.dumps {costs['orjson']:.1f} us"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- P8

RESUME_ID = "20250101-000000-resume00"


def _tool_output(n: int) -> str:
    line = '    result = self.store.read(session_id, since_seq)  # "offset"\n'
    return (line * (n // len(line) + 1))[:n]


def turn_events(i: int, output: str) -> list:
    """The turn of bench_store.py: prompt, read_file call, tool result, answer."""
    path = f"src/pkg/module_{i % 97}.py"
    call_id = f"call_{i:06d}"
    return [
        UserPrompt(text=f"Turn {i}: the test for {path} fails with a KeyError; please fix it."),
        ToolCall(call_id=call_id, name="read_file", arguments={"path": path}),
        ToolResult(call_id=call_id, output=output),
        AssistantMessage(
            text=f"I read {path}. The KeyError comes from line {i % 300 + 1}, where the "
            "lookup assumes the key was set by the constructor; I changed it to use .get()."
        ),
    ]


async def build_session(store_dir: Path, session_id: str, turns: int, tool_bytes: int) -> int:
    """A ``turns``-turn session through the store API, 500 turns per append; its log size."""
    store = open_store(str(store_dir))
    output = _tool_output(tool_bytes)
    batch = 500
    try:
        for start in range(0, turns, batch):
            events = [
                e for i in range(start, min(turns, start + batch)) for e in turn_events(i, output)
            ]
            await store.append(session_id, events)
    finally:
        await store.close()
    return (store_dir / "sessions" / f"{session_id}.jsonl").stat().st_size


@dataclass
class Resumes:
    size: int  # log bytes
    before: Samples = field(default_factory=Samples)
    after: Samples = field(default_factory=Samples)
    growth: Samples = field(default_factory=Samples)
    peak: Samples = field(default_factory=Samples)
    took: Samples = field(default_factory=Samples)


def resume_in_servers(work: Path, store_dir: Path, size: int, runs: int, name: str) -> Resumes:
    out = Resumes(size)
    for i in range(runs):
        child, _ = spawn_and_initialize(AGENT_CMD, work, f"{name}-{i}", {"store": str(store_dir)})
        try:
            time.sleep(0.2)  # idle
            rss0, _ = child.rss_kib()
            t0 = time.perf_counter()
            result = child.result(child.request("session/resume", {"sessionId": RESUME_ID}))
            out.took.values.append((time.perf_counter() - t0) * 1e3)
            time.sleep(0.2)
            rss1, hwm = child.rss_kib()
        finally:
            child.close()
        if result["head"] != 4 * RESUME_TURNS or result["turns"] != RESUME_TURNS:
            raise RuntimeError(f"resume gave {result}")
        out.before.values.append(rss0 / 1024)
        out.after.values.append(rss1 / 1024)
        out.growth.values.append((rss1 - rss0) / 1024)
        out.peak.values.append(hwm / 1024)
    return out


def bench_memory(work: Path, runs: int, idle: dict[str, Samples]) -> tuple[list[Row], Path]:
    big, small = work / "p8-store", work / "p8-store-small"
    started = time.perf_counter()
    size = asyncio.run(build_session(big, RESUME_ID, RESUME_TURNS, 1024))
    small_size = asyncio.run(build_session(small, RESUME_ID, RESUME_TURNS, 100))
    build_s = time.perf_counter() - started
    main = resume_in_servers(work, big, size, runs, "p8")
    lean = resume_in_servers(work, small, small_size, runs, "p8-small")
    rows = [
        Row(
            "agent-host serve idle RSS (P5 spawns)",
            idle["agent"],
            "MiB",
            idle["bare"],
            "bare",
            max_value=60,
        ),
        Row("bare pygls server idle RSS (P5 spawns)", idle["bare"], "MiB"),
        Row(
            "RSS growth: session/resume of 100,000 events",
            main.growth,
            "MiB",
            max_value=50,
            note=(
                f"log {size / 2**20:.1f} MiB ({RESUME_TURNS:,} turns x 4 events, 1 KB tool "
                f"results); resume took {fmt(main.took.median, 'ms')}"
            ),
        ),
        Row("  RSS before resume (same spawns)", main.before, "MiB"),
        Row("  RSS after resume", main.after, "MiB"),
        Row("  peak RSS (VmHWM) after resume", main.peak, "MiB"),
        Row(
            "RSS growth, 100-byte tool results (extra)",
            lean.growth,
            "MiB",
            note=(
                f"log {small_size / 2**20:.1f} MiB; peak {fmt(lean.peak.median, 'MiB')}; "
                f"resume took {fmt(lean.took.median, 'ms')}; both logs built in {build_s:.0f} s"
            ),
        ),
    ]
    return rows, big


# In a fresh interpreter: what the resumed session holds (tracemalloc), and what RSS
# holds beyond that (pymalloc arenas with free space, glibc heap malloc_trim gives back).
MEMORY_PROBE = r"""
import asyncio, ctypes, gc, os, sys, tracemalloc
import agent_host.server.app
from agent_host.session.host import AgentHost
store, sid, trace = sys.argv[1], sys.argv[2], sys.argv[3] == "trace"
def rss():
    d = {}
    for line in open(f"/proc/{os.getpid()}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            d[k] = int(v.split()[0]) / 1024
    return d
async def main():
    host = AgentHost(store=store, model="scripted:/dev/null")
    r0 = rss()
    if trace:
        tracemalloc.start()
    state = await host.resume(sid)
    gc.collect()
    r1 = rss()
    if trace:
        snap = tracemalloc.take_snapshot()
        live = sum(st.size for st in snap.statistics("filename"))
        print(f"  tracemalloc: {live / 2**20:.1f} MiB of Python objects live after the "
              "resume; by line:")
        for st in snap.statistics("lineno")[:4]:
            f = st.traceback[0]
            where = f.filename.split("agent_host/")[-1] + f":{f.lineno}"
            print(f"    {st.size / 2**20:6.1f} MiB {st.count:>8,} blocks  {where}")
        return
    sys.stdout.flush()
    sys._debugmallocstats()  # to fd 2: the parent reads it
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    r2 = rss()
    print(f"  RSS {r0['VmRSS']:.1f} -> {r1['VmRSS']:.1f} MiB (peak {r1['VmHWM']:.1f}); "
          f"{len(state.events):,} events held; after malloc_trim(0) {r2['VmRSS']:.1f} MiB")
asyncio.run(main())
"""


def _mallocstats(text: str) -> str:
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        key = key.strip("# ").strip()
        if key in (
            "arenas allocated current",
            "bytes in allocated blocks",
            "bytes in available blocks",
        ):
            found[key] = int(value.replace(",", "").split()[0])
    if len(found) < 3:
        return "  (no pymalloc statistics)"
    return (
        f"  pymalloc after the resume: {found['arenas allocated current']} arenas of 1 MiB, "
        f"{found['bytes in allocated blocks'] / 2**20:.1f} MiB in use, "
        f"{found['bytes in available blocks'] / 2**20:.1f} MiB free inside them"
    )


def memory_report(work: Path, store_dir: Path) -> str:
    lines = ["Where the resume's memory goes (AgentHost.resume in a fresh interpreter, same log):"]
    for mode in ("plain", "trace"):
        done = subprocess.run(
            [sys.executable, "-c", MEMORY_PROBE, str(store_dir), RESUME_ID, mode],
            capture_output=True,
            text=True,
            cwd=work,
            timeout=TIMEOUT,
        )
        if done.returncode:
            lines.append(f"  probe failed: {done.stderr[-500:]}")
            continue
        lines.append(done.stdout.rstrip())
        if mode == "plain":
            lines.append(_mallocstats(done.stderr))
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def default_base() -> Path:
    """The temp dir if it is on the repo's filesystem, else the repo's parent."""
    tmp = Path(tempfile.gettempdir())
    if os.stat(tmp).st_dev == os.stat(REPO).st_dev:
        return tmp / f"agent-host-bench-{os.getuid()}"
    return REPO.parent / ".agent-host-bench"


def _load() -> str:
    """/proc/loadavg's three averages, and CPU pressure (PSI some avg10)."""
    try:
        with open("/proc/loadavg") as f:
            text = " ".join(f.read().split()[:3])
    except OSError:
        return "?"
    try:
        with open("/proc/pressure/cpu") as f:
            some = f.readline().split()[1].split("=")[1]
        text += f", cpu pressure {some}%"
    except (OSError, IndexError):
        pass
    return text


def _git_state() -> str:
    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *a], capture_output=True, text=True, check=False
        ).stdout.strip()

    rev = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "agent_host")
    return rev + (" + uncommitted changes to agent_host" if dirty else "")


def header(base: Path, args: argparse.Namespace) -> None:
    import lsprotocol
    import pygls

    def version(module: Any, dist: str) -> str:
        from importlib.metadata import version as v

        try:
            return v(dist)
        except Exception:
            return getattr(module, "__version__", "?")

    print("agent_host server benchmarks" + (" (--quick)" if args.quick else ""))
    print(f"  python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"  pygls {version(pygls, 'pygls')}, lsprotocol {version(lsprotocol, 'lsprotocol')}")
    print(f"  files under {base}; agent_host at {_git_state()}")
    print(f"  load average at start: {_load()}")
    print(
        "  p90* = the bad-side 90th percentile: p90 of times and sizes, p10 of rates; "
        "MiB = 2^20 bytes"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer spawns and relays")
    parser.add_argument("--dir", help="where to put the stores (one filesystem for the run)")
    parser.add_argument("--only", help="comma-separated subset of p5,p6,p8")
    parser.add_argument(
        "--no-pygls-client", action="store_true", help="P6 without the pygls client rows"
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="print the diagnostics (importtime, relay profile, memory breakdown) even "
        "for targets that were met",
    )
    args = parser.parse_args()
    base = Path(args.dir).expanduser().absolute() if args.dir else default_base()
    base.mkdir(parents=True, exist_ok=True)
    header(base, args)
    work = Path(tempfile.mkdtemp(prefix="server-", dir=base))
    (work / "ws").mkdir()
    only = set(args.only.split(",")) if args.only else {"p5", "p6", "p8"}
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    idle: dict[str, Samples] | None = None
    try:
        if "p5" in only or "p8" in only:
            n = 5 if args.quick else 15
            rows, idle = bench_cold_start(work, n)
            if "p5" in only:
                RESULTS.append((f"P5  cold start to the initialize result ({n} spawns each)", rows))
                print_section(*RESULTS[-1])
                missed = not all(ok for r in rows for _, ok in r.targets())
                if missed or args.explain:
                    print()
                    print(importtime_report(work, [sys.executable, str(work / "bare_server.py")]))
        if "p6" in only:
            n = 2 if args.quick else 5
            RESULTS.append(
                (
                    f"P6  relay of {DELTAS:,} text deltas through session/send ({n} runs each)",
                    bench_relay(work, n, with_pygls=not args.no_pygls_client),
                )
            )
            print_section(*RESULTS[-1])
            if args.explain or not all(ok for r in RESULTS[-1][1] for _, ok in r.targets()):
                print()
                print(relay_report(work))
        if "p8" in only:
            assert idle is not None
            n = 2 if args.quick else 5
            rows, store_dir = bench_memory(work, n, idle)
            RESULTS.append((f"P8  memory (VmRSS; resume: {n} servers each)", rows))
            print_section(*RESULTS[-1])
            if args.explain or not all(ok for r in rows for _, ok in r.targets()):
                print()
                print(memory_report(work, store_dir))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [r for _, section in RESULTS for r in section if r.targets()]
    passed = sum(all(ok for _, ok in r.targets()) for r in rows)
    print(
        f"\nserver: {passed}/{len(rows)} targets met; {time.perf_counter() - started:.0f}s in all; "
        f"load average at end: {_load()}"
    )


if __name__ == "__main__":
    main()
