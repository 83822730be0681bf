"""What bench_server.py's benchmarks share: a server (or writer) as a child process
on pipes, LSP framing, and the table they print."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from bench_common import quantile

AGENT_CMD = [sys.executable, "-m", "agent_host", "serve"]
TIMEOUT = 300.0  # seconds any one child may live

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
        return quantile(self.values, frac)

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
