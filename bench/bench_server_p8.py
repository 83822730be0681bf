"""P8: memory, VmRSS of an idle server, its growth over a session/resume of 100,000
events (and a history page after it), and one server holding 20 such sessions; on a
miss, where the resumed session's memory goes.

The logs are built through the store API, then resumed once in this process so they
have the resume snapshot a turn end writes (session.resume_snapshot)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_server_common import (
    AGENT_CMD,
    TIMEOUT,
    Row,
    Samples,
    fmt,
    spawn_and_initialize,
)

from agent_host.session import open_store
from agent_host.session.events import AssistantMessage, ToolCall, ToolResult, UserPrompt
from agent_host.session.state import SessionState

RESUME_TURNS = 25_000  # x 4 events = 100,000
RESUME_ID = "20250101-000000-resume00"
HELD = 20  # sessions one server holds at once
HISTORY_PAGE = 50  # messages of session/history after each resume, as an editor shows


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
        state = SessionState(store, session_id)
        await state.refresh(full=False)  # no snapshot yet: folds the log and writes one
    finally:
        await store.close()
    log = (store_dir / "sessions" / f"{session_id}.jsonl").read_bytes()
    return len(log.rstrip(b"\0"))  # without the zeros appends write over


@dataclass
class Resumes:
    size: int  # log bytes
    before: Samples = field(default_factory=Samples)
    after: Samples = field(default_factory=Samples)
    growth: Samples = field(default_factory=Samples)
    peak: Samples = field(default_factory=Samples)
    peak_growth: Samples = field(default_factory=Samples)
    took: Samples = field(default_factory=Samples)
    page_growth: Samples = field(default_factory=Samples)
    page_took: Samples = field(default_factory=Samples)


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
            t0 = time.perf_counter()
            page = child.result(
                child.request("session/history", {"sessionId": RESUME_ID, "limit": HISTORY_PAGE})
            )
            out.page_took.values.append((time.perf_counter() - t0) * 1e3)
            time.sleep(0.2)
            rss2, _ = child.rss_kib()
        finally:
            child.close()
        if result["head"] != 4 * RESUME_TURNS or result["turns"] != RESUME_TURNS:
            raise RuntimeError(f"resume gave {result}")
        out.before.values.append(rss0 / 1024)
        out.after.values.append(rss1 / 1024)
        out.growth.values.append((rss1 - rss0) / 1024)
        out.peak.values.append(hwm / 1024)
        out.peak_growth.values.append((hwm - rss0) / 1024)
        out.page_growth.values.append((rss2 - rss0) / 1024)
        if len(page["messages"]) < HISTORY_PAGE:
            raise RuntimeError(f"history gave {len(page['messages'])} messages")
    return out


def first_resumes(work: Path, store_dir: Path, size: int, runs: int) -> Resumes:
    """The resume of the same session from a copy of its store without the snapshot:
    the server folds the log, writes the snapshot, and then should hold only it."""
    copies = []
    for i in range(runs):
        copy = work / f"p8-no-snapshot-{i}"
        shutil.copytree(store_dir, copy, ignore=shutil.ignore_patterns("snapshots"))
        copies.append(copy)
    out = Resumes(size)
    for i, copy in enumerate(copies):
        one = resume_in_servers(work, copy, size, 1, f"p8-first-{i}")
        for name in ("before", "after", "growth", "peak", "peak_growth", "took"):
            getattr(out, name).values.extend(getattr(one, name).values)
        shutil.rmtree(copy)
    return out


def hold_many(work: Path, store_dir: Path, runs: int) -> tuple[Samples, Samples, Samples]:
    """One server resuming ``HELD`` copies of the session, each with a history page:
    its VmRSS holding them all, the growth, and the time per resume."""
    many = work / "p8-many"
    (many / "sessions").mkdir(parents=True)
    (many / "snapshots").mkdir()
    ids = [f"20250101-000000-held{n:04d}" for n in range(HELD)]
    for sid in ids:
        shutil.copy(
            store_dir / "sessions" / f"{RESUME_ID}.jsonl", many / "sessions" / f"{sid}.jsonl"
        )
        shutil.copy(
            store_dir / "snapshots" / f"{RESUME_ID}.snap", many / "snapshots" / f"{sid}.snap"
        )

    async def index() -> None:  # list() builds the index the copies are missing from
        store = open_store(str(many))
        try:
            assert len(await store.list()) == HELD
        finally:
            await store.close()

    asyncio.run(index())
    rss, growth, took = Samples(), Samples(), Samples()
    for i in range(runs):
        child, _ = spawn_and_initialize(AGENT_CMD, work, f"p8-many-{i}", {"store": str(many)})
        try:
            time.sleep(0.2)
            rss0, _ = child.rss_kib()
            for sid in ids:
                t0 = time.perf_counter()
                child.result(child.request("session/resume", {"sessionId": sid}))
                took.values.append((time.perf_counter() - t0) * 1e3)
                params = {"sessionId": sid, "limit": HISTORY_PAGE}
                child.result(child.request("session/history", params))
            time.sleep(0.2)
            rss1, _ = child.rss_kib()
        finally:
            child.close()
        rss.values.append(rss1 / 1024)
        growth.values.append((rss1 - rss0) / 1024)
    return rss, growth, took


def bench_memory(work: Path, runs: int, idle: dict[str, Samples]) -> tuple[list[Row], Path]:
    big, small = work / "p8-store", work / "p8-store-small"
    started = time.perf_counter()
    size = asyncio.run(build_session(big, RESUME_ID, RESUME_TURNS, 1024))
    small_size = asyncio.run(build_session(small, RESUME_ID, RESUME_TURNS, 100))
    build_s = time.perf_counter() - started
    main = resume_in_servers(work, big, size, runs, "p8")
    lean = resume_in_servers(work, small, small_size, runs, "p8-small")
    held, held_growth, held_took = hold_many(work, big, max(1, runs // 2))
    first = first_resumes(work, big, size, max(1, runs // 2))
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
                "results), with its resume snapshot"
            ),
        ),
        Row("session/resume of 100,000 events, time", main.took, "ms", max_value=100),
        Row(
            "RSS growth: first session/resume of 100,000 events, no snapshot",
            first.growth,
            "MiB",
            max_value=50,
            note=(
                f"folds the log and writes the snapshot in {fmt(first.took.median, 'ms')}; "
                f"peak growth {fmt(first.peak_growth.median, 'MiB')}"
            ),
        ),
        Row("  RSS before resume (same spawns)", main.before, "MiB"),
        Row("  RSS after resume", main.after, "MiB"),
        Row("  peak RSS (VmHWM) after resume", main.peak, "MiB"),
        Row("peak RSS growth: session/resume", main.peak_growth, "MiB", max_value=80),
        Row(
            f"  RSS growth with a session/history page ({HISTORY_PAGE})",
            main.page_growth,
            "MiB",
            note=f"the page took {fmt(main.page_took.median, 'ms')} (checks the whole "
            "snapshot, parses the page's messages, keeps none of them)",
        ),
        Row(
            f"server holding {HELD} such sessions, RSS",
            held,
            "MiB",
            max_value=300,
            note=(
                f"each resumed and paged ({HISTORY_PAGE} messages) in one server; growth "
                f"{fmt(held_growth.median, 'MiB')}, resume {fmt(held_took.median, 'ms')} each"
            ),
        ),
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
    held = f"{len(state.events):,} events" if state.loaded else "its snapshot's header"
    print(f"  RSS {r0['VmRSS']:.1f} -> {r1['VmRSS']:.1f} MiB (peak {r1['VmHWM']:.1f}); "
          f"{held} held; after malloc_trim(0) {r2['VmRSS']:.1f} MiB")
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
