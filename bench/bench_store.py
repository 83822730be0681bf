#!/usr/bin/env python
"""Session store benchmarks: our stores against the OpenAI Agents SDK's SQLiteSession.

    python bench/bench_store.py            # full run (~1-3 min once the P3 cache exists)
    python bench/bench_store.py --quick    # fewer iterations
    python bench/bench_store.py --dir D    # where the files go (default: see below)

P1  durable append of one 4-event turn to an existing session
    (ours: file store, sqlite store; peer: SQLiteSession.add_items; floor: write+fsync)
P2  load a 1,000-turn (4,000-event) session into model messages from a cold store object
P3  list() over 10,000 sessions, against a bare os.scandir of the sessions folder

Every file of one run lives under one directory on one filesystem (the default is a
folder in the temp dir when that is on the repo's filesystem, else beside the repo).
The 10,000 sessions of P3 are created once through the store API and cached under
that directory (``--fresh`` rebuilds them). See docs/performance.md for a reading.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from agent_host.session import open_store
from agent_host.session.conversation import to_messages
from agent_host.session.events import AssistantMessage, ToolCall, ToolResult, UserPrompt

try:
    from agents.memory import SQLiteSession
except ImportError:  # pragma: no cover - the peer is the "bench" extra
    sys.exit("the peer is missing: pip install -e '.[bench]' (openai-agents)")

REPO = Path(__file__).resolve().parent.parent
CACHE_VERSION = 1  # bump when the cached P3 data set changes shape
FLOOR_BYTES = 1536

# --------------------------------------------------------------------------- data

_rng = random.Random(1234)
_WORDS = (
    "def return self value None import from class if else for in while try except "
    "raise with as async await lambda yield assert pass break continue path data "
    "items result config session event store append read list index offset"
).split()


def _code_like(n: int, rng: random.Random) -> str:
    """About ``n`` characters of source-looking text (newlines, indents, quotes)."""
    lines, size = [], 0
    while size < n:
        indent = "    " * rng.randrange(3)
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 9)))
        line = f'{indent}{words}("{rng.choice(_WORDS)}")'
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:n]


TOOL_OUTPUT = _code_like(1024, _rng)  # the 1 KB tool result


def _texts(i: int) -> tuple[str, str, dict, str, str]:
    path = f"src/pkg/module_{i % 97}.py"
    prompt = f"Turn {i}: the test for {path} fails with a KeyError; please find out why and fix it."
    answer = (
        f"I read {path}. The KeyError comes from line {i % 300 + 1}, where the lookup "
        "assumes the key was set by the constructor; I changed it to use .get() with a default."
    )
    return prompt, f"call_{i:06d}", {"path": path}, TOOL_OUTPUT, answer


def turn_events(i: int) -> list:
    prompt, call_id, args, output, answer = _texts(i)
    return [
        UserPrompt(text=prompt),
        ToolCall(call_id=call_id, name="read_file", arguments=args),
        ToolResult(call_id=call_id, output=output),
        AssistantMessage(text=answer),
    ]


def turn_items(i: int) -> list[dict]:
    """The same turn in OpenAI Responses input format, as the peer stores it."""
    prompt, call_id, args, output, answer = _texts(i)
    return [
        {"role": "user", "content": prompt},
        {
            "type": "function_call",
            "call_id": call_id,
            "name": "read_file",
            "arguments": json.dumps(args),
        },
        {"type": "function_call_output", "call_id": call_id, "output": output},
        {"role": "assistant", "content": answer},
    ]


# --------------------------------------------------------------------------- stats


@dataclass
class Samples:
    name: str
    times: list[float] = field(default_factory=list)

    def q(self, frac: float) -> float:
        s = sorted(self.times)
        return s[min(len(s) - 1, round(frac * (len(s) - 1)))]

    @property
    def median(self) -> float:
        return self.q(0.5)

    @property
    def p90(self) -> float:
        return self.q(0.9)


@dataclass
class Row:
    name: str
    samples: Samples
    ref: Samples | None = None  # what the ratio is against
    ref_label: str = ""
    limit_ratio: float | None = None  # target: median <= limit_ratio * ref median
    limit_ms: float | None = None  # target: median <= limit_ms
    note: str = ""
    extra: bool = False  # the targets are the file store's; other rows' verdicts are for show

    @property
    def ratio(self) -> float | None:
        return self.samples.median / self.ref.median if self.ref else None

    def verdicts(self) -> list[bool]:
        out = []
        if self.limit_ratio is not None and self.ratio is not None:
            out.append(self.ratio <= self.limit_ratio)
        if self.limit_ms is not None:
            out.append(self.samples.median * 1e3 <= self.limit_ms)
        return out


RESULTS: list[tuple[str, list[Row]]] = []


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.2f}" if ms < 100 else f"{ms:.1f}"


def print_section(title: str, rows: list[Row]) -> None:
    head = (
        f"{'benchmark':<44} {'median ms':>10} {'p90 ms':>9} {'n':>4}  "
        f"{'ratio':<18} {'target':<26} result"
    )
    print(f"\n{title}")
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = f"{r.ratio:.2f}x {r.ref_label}" if r.ratio is not None else ""
        targets = []
        if r.limit_ratio is not None:
            targets.append(f"<= {r.limit_ratio:g}x {r.ref_label}")
        if r.limit_ms is not None:
            targets.append(f"<= {r.limit_ms:g} ms")
        verdicts = r.verdicts()
        result = "" if not verdicts else ("PASS" if all(verdicts) else "MISS")
        if len(verdicts) > 1 and not all(verdicts):
            missed = [t for t, v in zip(targets, verdicts, strict=True) if not v]
            result += f" ({', '.join(missed)})"
        if verdicts and r.extra:
            result = result.lower() + " (extra)"
        print(
            f"{r.name:<44} {fmt_ms(r.samples.median):>10} {fmt_ms(r.samples.p90):>9} "
            f"{len(r.samples.times):>4}  {ratio:<18} {', '.join(targets):<26} {result}"
        )
        if r.note:
            print(f"{'':<4}{r.note}")


# --------------------------------------------------------------------------- runner


@dataclass
class Contender:
    name: str
    run: Callable[[int], Awaitable[object]]  # timed
    before: Callable[[int], Awaitable[None]] | None = None  # untimed, before run
    after: Callable[[int], Awaitable[None]] | None = None  # untimed, after run
    samples: Samples = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.samples = Samples(self.name)


async def round_robin(contenders: list[Contender], iterations: int, warmup: int) -> None:
    """Run every contender once per iteration, rotating who goes first, so drift on a
    noisy machine (other tenants, writeback, thermal) hits all of them alike."""
    n = len(contenders)
    # Move everything alive now (setup data, and the ~150,000 objects the peer's SDK
    # imports) out of the collector's reach: otherwise every full collection, which the
    # timed operations' own allocations trigger, costs ~100 ms here and lands in p90.
    gc.collect()
    gc.freeze()
    for it in range(warmup + iterations):
        k = it % n
        for c in contenders[k:] + contenders[:k]:
            if c.before:
                await c.before(it)
            t0 = time.perf_counter()
            await c.run(it)
            t1 = time.perf_counter()
            if c.after:
                await c.after(it)
            if it >= warmup:
                c.samples.times.append(t1 - t0)


# --------------------------------------------------------------------------- P1


async def bench_append(work: Path, iterations: int) -> list[Row]:
    file_store = open_store((work / "p1-file").as_uri())
    sqlite_store = open_store(f"sqlite://{work / 'p1-store.db'}")
    peer = SQLiteSession("p1", str(work / "p1-peer.db"))
    sid = "p1"
    # An existing session: a few turns in before the clock starts.
    for i in range(5):
        await file_store.append(sid, turn_events(i))
        await sqlite_store.append(sid, turn_events(i))
        await peer.add_items(turn_items(i))
    floor_fd = os.open(work / "p1-floor.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    floor_buf = b"x" * (FLOOR_BYTES - 1) + b"\n"

    pending: dict[str, list] = {}

    async def prep_events(it: int) -> None:
        pending["events"] = turn_events(1000 + it)

    async def prep_items(it: int) -> None:
        pending["items"] = turn_items(1000 + it)

    async def file_append(it: int) -> None:
        await file_store.append(sid, pending["events"])

    async def sqlite_append(it: int) -> None:
        await sqlite_store.append(sid, pending["events"])

    async def peer_add(it: int) -> None:
        await peer.add_items(pending["items"])

    def write_fsync() -> None:
        os.write(floor_fd, floor_buf)
        os.fsync(floor_fd)

    async def floor(it: int) -> None:
        write_fsync()

    async def floor_thread(it: int) -> None:
        await asyncio.to_thread(write_fsync)

    contenders = [
        Contender("file store append (ours)", file_append, before=prep_events),
        Contender("sqlite store append (ours)", sqlite_append, before=prep_events),
        Contender("SQLiteSession.add_items (peer)", peer_add, before=prep_items),
        Contender("os.write + os.fsync 1.5 KB (floor)", floor),
        Contender("floor via asyncio.to_thread", floor_thread),
    ]
    await round_robin(contenders, iterations, warmup=max(10, iterations // 20))
    os.close(floor_fd)
    turn_bytes = (work / "p1-file" / "sessions" / f"{sid}.jsonl").stat().st_size
    events = len(await file_store.read(sid))
    await file_store.close()
    await sqlite_store.close()
    peer.close()
    f, s, p, fl, flt = (c.samples for c in contenders)
    note = f"one turn = {turn_bytes * 4 // events} bytes of framed JSONL in the file store"
    return [
        Row("file store append (ours) vs peer", f, p, "peer", limit_ratio=0.5),
        Row("file store append (ours) vs floor", f, fl, "floor", limit_ratio=2.0, note=note),
        Row("sqlite store append (ours) vs peer", s, p, "peer", limit_ratio=0.5, extra=True),
        Row("sqlite store append (ours) vs floor", s, fl, "floor", limit_ratio=2.0, extra=True),
        Row("SQLiteSession.add_items (peer)", p, fl, "floor"),
        Row("os.write + os.fsync 1.5 KB (floor)", fl),
        Row(
            "  same, via asyncio.to_thread",
            flt,
            fl,
            "floor",
            note="what any async store pays for one write+fsync off the event loop",
        ),
    ]


# --------------------------------------------------------------------------- P2

TURNS = 1000


async def bench_load(work: Path, iterations: int) -> list[Row]:
    file_url = (work / "p2-file").as_uri()
    sqlite_url = f"sqlite://{work / 'p2-store.db'}"
    peer_db = str(work / "p2-peer.db")
    sid = "p2"
    batch = 50  # turns per append: same log, fewer fsyncs while building it
    for url in (file_url, sqlite_url):
        store = open_store(url)
        for start in range(0, TURNS, batch):
            turns = range(start, start + batch)
            await store.append(sid, [e for i in turns for e in turn_events(i)])
        await store.close()
    peer = SQLiteSession(sid, peer_db)
    for start in range(0, TURNS, batch):
        await peer.add_items([x for i in range(start, start + batch) for x in turn_items(i)])
    peer.close()

    held: dict[str, object] = {}
    ref_events = await _read_once(file_url, sid)
    expected = len(to_messages(ref_events))
    assert len(ref_events) == 4 * TURNS and expected == 4 * TURNS, (len(ref_events), expected)

    def cold(url: str) -> Callable[[int], Awaitable[None]]:
        async def before(it: int) -> None:
            held["store"] = open_store(url)

        return before

    async def close_store(it: int) -> None:
        await held.pop("store").close()  # type: ignore[attr-defined]

    async def load(it: int) -> None:
        held["out"] = to_messages(await held["store"].read(sid))  # type: ignore[attr-defined]

    async def read_only(it: int) -> None:
        held["out"] = await held["store"].read(sid)  # type: ignore[attr-defined]

    def open_and_load(url: str) -> Callable[[int], Awaitable[None]]:
        async def run(it: int) -> None:
            held["store"] = open_store(url)
            held["out"] = to_messages(await held["store"].read(sid))  # type: ignore[attr-defined]

        return run

    async def fold_only(it: int) -> None:
        held["out"] = to_messages(ref_events)

    async def peer_new(it: int) -> None:
        held["peer"] = SQLiteSession(sid, peer_db)

    async def peer_get(it: int) -> None:
        held["out"] = await held["peer"].get_items()  # type: ignore[attr-defined]

    async def peer_open_and_get(it: int) -> None:
        held["peer"] = SQLiteSession(sid, peer_db)
        held["out"] = await held["peer"].get_items()  # type: ignore[attr-defined]

    async def peer_close(it: int) -> None:
        held.pop("peer").close()  # type: ignore[attr-defined]

    async def check_messages(it: int) -> None:
        assert len(held.pop("out")) == expected  # type: ignore[arg-type]

    async def check_and_close(it: int) -> None:
        await check_messages(it)
        await close_store(it)

    async def check_and_close_peer(it: int) -> None:
        await check_messages(it)
        await peer_close(it)

    c = [
        Contender("file", load, cold(file_url), check_and_close),
        Contender("sqlite", load, cold(sqlite_url), check_and_close),
        Contender("peer", peer_get, peer_new, check_and_close_peer),
        Contender("file read", read_only, cold(file_url), check_and_close),
        Contender("sqlite read", read_only, cold(sqlite_url), check_and_close),
        Contender("fold", fold_only, None, check_messages),
        Contender("file open+load", open_and_load(file_url), None, check_and_close),
        Contender("peer open+get", peer_open_and_get, None, check_and_close_peer),
    ]
    await round_robin(c, iterations, warmup=3)
    file, sql, peer_s, file_read, sql_read, fold, file_open, peer_open = (x.samples for x in c)
    size = (work / "p2-file" / "sessions" / f"{sid}.jsonl").stat().st_size
    return [
        Row(
            "file: to_messages(read()) (ours)",
            file,
            peer_s,
            "peer",
            limit_ratio=0.5,
            note=f"log is {size / 1e6:.2f} MB, {4 * TURNS} events; "
            "cold store object, warm page cache",
        ),
        Row("sqlite: to_messages(read()) (ours)", sql, peer_s, "peer", limit_ratio=0.5, extra=True),
        Row("SQLiteSession.get_items() (peer)", peer_s),
        Row("  file: read() alone", file_read, peer_s, "peer"),
        Row("  sqlite: read() alone", sql_read, peer_s, "peer"),
        Row("  to_messages() alone", fold, peer_s, "peer"),
        Row("  file: open_store()+read+fold", file_open, peer_open, "peer"),
        Row("  peer: SQLiteSession()+get_items", peer_open),
    ]


async def _read_once(url: str, sid: str) -> list:
    store = open_store(url)
    try:
        return await store.read(sid)
    finally:
        await store.close()


# --------------------------------------------------------------------------- P3

SESSIONS = 10_000


def session_events(n: int) -> list:
    """The two events of P3's session ``n``."""
    return [
        UserPrompt(text=f"Session {n}: fix the flaky test in tests/test_{n % 300}.py"),
        AssistantMessage(text="Done: the test waited on a timer; now it awaits."),
    ]


async def _log_shape(root: Path) -> bytes:
    """Session 0's log with every number and checksum blanked: it changes when the
    store's on-disk format does, and then a cache built by an older version is stale."""
    try:
        data = (root / "sessions" / "session-00000.jsonl").read_bytes()
    except FileNotFoundError:
        return b""
    return re.sub(rb"[0-9a-f]{8}|[0-9][0-9.e+-]*", b"#", data)


async def _cache_is_current(file_root: Path, marker: Path, probe: Path) -> bool:
    if not marker.exists():
        return False
    shutil.rmtree(probe, ignore_errors=True)
    store = open_store(probe.as_uri())
    try:
        await store.append("session-00000", session_events(0))
    finally:
        await store.close()
    current = await _log_shape(probe) == await _log_shape(file_root)
    shutil.rmtree(probe, ignore_errors=True)
    return current


async def ensure_list_cache(base: Path, fresh: bool) -> tuple[Path, Path]:
    """10,000 sessions of two events each in a file store and a sqlite store, made
    through the store API once and kept under ``base`` for later runs (rebuilt when
    ``fresh``, or when the file store's log format no longer matches the cache)."""
    cache = base / f"p3-cache-v{CACHE_VERSION}-{SESSIONS}"
    marker = cache / "ready.json"
    file_root, sqlite_db = cache / "file", cache / "store.db"
    if not fresh and await _cache_is_current(file_root, marker, base / "p3-format-probe"):
        return file_root, sqlite_db
    if cache.exists():
        shutil.rmtree(cache)  # stale, asked to go, or half built by an interrupted run
    cache.mkdir(parents=True)
    print(
        f"P3: creating {SESSIONS:,} sessions in {cache} (once; cached for later runs)...",
        flush=True,
    )
    t0 = time.perf_counter()
    loop = asyncio.get_running_loop()
    # Many appends in flight: each fsyncs, and the filesystem commits them in groups.
    loop.set_default_executor(ThreadPoolExecutor(max_workers=32))
    for url in (file_root.as_uri(), f"sqlite://{sqlite_db}"):
        store = open_store(url)
        gate = asyncio.Semaphore(64)

        async def make(n: int, store=store, gate=gate) -> None:
            async with gate:
                await store.append(f"session-{n:05d}", session_events(n))

        await asyncio.gather(*(make(n) for n in range(SESSIONS)))
        await store.close()
        print(f"    {url.split(':')[0]} store: {time.perf_counter() - t0:.1f}s", flush=True)
    loop.set_default_executor(ThreadPoolExecutor())
    marker.write_text(json.dumps({"sessions": SESSIONS, "version": CACHE_VERSION}))
    return file_root, sqlite_db


async def bench_list(base: Path, iterations: int, fresh: bool) -> list[Row]:
    file_root, sqlite_db = await ensure_list_cache(base, fresh)
    file_url, sqlite_url = file_root.as_uri(), f"sqlite://{sqlite_db}"
    sessions_dir = file_root / "sessions"
    warm_file, warm_sqlite = open_store(file_url), open_store(sqlite_url)
    # Settle the index first (a list() may repair or compact it), and check the count.
    for s in (warm_file, warm_sqlite):
        n = len(await s.list())
        assert n == SESSIONS, (s, n)
    held: dict[str, object] = {}

    def cold(url: str):
        async def before(it: int) -> None:
            held["store"] = open_store(url)

        return before

    async def close_store(it: int) -> None:
        await held.pop("store").close()  # type: ignore[attr-defined]

    async def list_cold(it: int) -> None:
        held["out"] = await held["store"].list()  # type: ignore[attr-defined]

    async def list_file_warm(it: int) -> None:
        held["out"] = await warm_file.list()

    async def list_sqlite_warm(it: int) -> None:
        held["out"] = await warm_sqlite.list()

    async def scandir(it: int) -> None:
        with os.scandir(sessions_dir) as entries:
            held["out"] = [e.name for e in entries]

    async def check(it: int) -> None:
        assert len(held.pop("out")) == SESSIONS  # type: ignore[arg-type]

    async def check_and_close(it: int) -> None:
        await check(it)
        await close_store(it)

    c = [
        Contender("file cold", list_cold, cold(file_url), check_and_close),
        Contender("file warm", list_file_warm, None, check),
        Contender("sqlite cold", list_cold, cold(sqlite_url), check_and_close),
        Contender("sqlite warm", list_sqlite_warm, None, check),
        Contender("scandir", scandir, None, check),
    ]
    await round_robin(c, iterations, warmup=3)
    await warm_file.close()
    await warm_sqlite.close()
    fc, fw, sc, sw, sd = (x.samples for x in c)
    index = file_root / "index.jsonl"
    lines = index.read_bytes().count(b"\n")
    note = f"index.jsonl: {lines:,} lines, {index.stat().st_size / 1e6:.2f} MB"
    return [
        Row(
            "file: list(), new store object (ours)",
            fc,
            sd,
            "scandir",
            limit_ratio=3.0,
            limit_ms=30,
            note=note,
        ),
        Row(
            "file: list(), same store object (ours)",
            fw,
            sd,
            "scandir",
            limit_ratio=3.0,
            limit_ms=30,
        ),
        Row("sqlite: list(), new store object (ours)", sc, sd, "scandir"),
        Row("sqlite: list(), same store object (ours)", sw, sd, "scandir"),
        Row("os.scandir(sessions) names (floor)", sd),
    ]


# --------------------------------------------------------------------------- main


def default_base() -> Path:
    """The temp dir if it is on the repo's filesystem, else the repo's parent."""
    tmp = Path(tempfile.gettempdir())
    if os.stat(tmp).st_dev == os.stat(REPO).st_dev:
        return tmp / f"agent-host-bench-{os.getuid()}"
    return REPO.parent / ".agent-host-bench"


def filesystem_of(path: Path) -> str:
    """'<device> <fstype> on <mount point>' for the filesystem holding ``path``."""
    best = ("?", "?", "")
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                dev, mnt, fstype = line.split()[:3]
                mnt = mnt.replace("\\040", " ")
                if (str(path) + "/").startswith(mnt.rstrip("/") + "/") and len(mnt) >= len(best[2]):
                    best = (dev, fstype, mnt)
    except OSError:
        pass
    return f"{best[0]} {best[1]} on {best[2] or '?'}"


def header(base: Path, args: argparse.Namespace) -> None:
    import agents

    print("agent_host session store benchmarks" + (" (--quick)" if args.quick else ""))
    print(f"  python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"  sqlite {sqlite3.sqlite_version}, openai-agents {getattr(agents, '__version__', '?')}")
    fs = filesystem_of(base)
    print(f"  files under {base} ({fs}); OS page cache warm for every contender")
    if fs.split()[1:2] in (["tmpfs"], ["ramfs"]):
        print("  WARNING: a RAM filesystem: fsync costs nothing here, so P1 measures no disk")
    print(f"  agent_host at {_git_state()}; load average {_load()}")
    print("  times are wall clock per operation (time.perf_counter), round-robin interleaved;")
    print("  gc.freeze() after setup, so full collections do not scan the peer SDK's imports")


def _load() -> str:
    """Load average, and the share of the last 10 s some task waited for a CPU (PSI):
    other work on the machine shows here and makes a run noisy."""
    try:
        text = " ".join(f"{x:.2f}" for x in os.getloadavg())
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
    import subprocess

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *a], capture_output=True, text=True, check=False
        ).stdout.strip()

    rev = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "agent_host")
    return rev + (" + uncommitted changes to agent_host" if dirty else "")


async def main_async(args: argparse.Namespace) -> None:
    base = Path(args.dir).expanduser().absolute() if args.dir else default_base()
    base.mkdir(parents=True, exist_ok=True)
    header(base, args)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    only = set(args.only.split(",")) if args.only else {"p1", "p2", "p3"}
    started = time.perf_counter()
    try:
        if "p1" in only:
            n = 200 if args.quick else 500
            RESULTS.append(
                (
                    f"P1  durable append of one 4-event turn ({n} iterations)",
                    await bench_append(work, n),
                )
            )
            print_section(*RESULTS[-1])
        if "p2" in only:
            n = 10 if args.quick else 40
            RESULTS.append(
                (
                    f"P2  load a {TURNS:,}-turn session into messages ({n} iterations)",
                    await bench_load(work, n),
                )
            )
            print_section(*RESULTS[-1])
        if "p3" in only:
            n = 15 if args.quick else 60
            RESULTS.append(
                (
                    f"P3  list() over {SESSIONS:,} sessions ({n} iterations)",
                    await bench_list(base, n, args.fresh),
                )
            )
            print_section(*RESULTS[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [r for _, section in RESULTS for r in section if r.verdicts() and not r.extra]
    passed = sum(all(r.verdicts()) for r in rows)
    print(
        f"\nfile store: {passed}/{len(rows)} targets met (sqlite store rows are extras); "
        f"{time.perf_counter() - started:.0f}s in all; "
        f"load average now {_load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--dir", help="where to put the files (one filesystem for the run)")
    parser.add_argument("--only", help="comma-separated subset of p1,p2,p3")
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached P3 sessions")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
