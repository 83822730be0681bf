#!/usr/bin/env python
"""P13 pages by key, the SQLite resume header and the turn end (issue 27), each
beside its peer or floor in the same run.

    python bench/bench_store_p13.py [--sessions 100000] [--events 400000] [--dir D]

Pages: ``list_page(50)`` of 100,000 sessions on the file and SQLite stores, a store
object kept open (as a server holds it; median of 30 first pages, each after one
session was written), and its first page from a new store object (median of 5);
beside ``list()`` of the same store, what a page cost before it was read by key. On
the file store also the first page of a new store object with the index's tail just
under its limit (median of 5), and once on a format-1 index, which it rewrites. The sessions are one
session made through the API and copied (its log and its index line on the file
store, its rows on SQLite), with distinct times: building 100,000 through the API
would take most of an hour of fsyncs.

Resume header: ``resume_snapshot.load`` without the body (what a resume reads first)
of a session of 400,000 events with its snapshot, on SQLite beside the file store,
from a new store object each time (median of 9).

Turn end: a turn (4 events and its turn_end) appended through a session resumed
from its snapshot, its conversation read (as a turn reads it), on the 400,000-event
session beside a 4,000-event one of the same store, in the same run (median of 9
turns each); then, for reference, the same turn end writing the snapshot whole (what
every turn end did before segments; median of 3).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_common import default_base, git_state, load_average
from bench_store_common import turn_events

from agent_host.session import open_store
from agent_host.session.events import AssistantMessage
from agent_host.session.store import file_index
from agent_host.session.store.info import SessionInfo


async def build_sessions(work: Path, n: int) -> tuple[str, str]:
    file_root, db = work / "pages-file", work / "pages.db"
    for url in (str(file_root), f"sqlite://{db}"):
        store = open_store(url)
        await store.append("seed", turn_events(0))
        await store.close()
    log = (file_root / "sessions" / "seed.jsonl").read_bytes()
    loaded = file_index.parse((file_root / "index.jsonl").read_bytes())
    assert loaded is not None
    (seed,) = loaded[0].values()
    infos = {}
    base = time.time() - n
    for i in range(n):
        sid = f"s{i:06d}"
        (file_root / "sessions" / f"{sid}.jsonl").write_bytes(log)
        infos[sid] = SessionInfo(sid, base + i, base + i, seed.head, seed.turns, seed.title, "")
    # As a compaction leaves it (format 2): sorted, under its header.
    (file_root / "index.jsonl").write_bytes(file_index.sorted_form(infos, set()))
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO sessions SELECT ?, ?, ?, head, turns, title, workspace "
            "FROM sessions WHERE id = 'seed'",
            [(f"s{i:06d}", base + i, base + i) for i in range(n)],
        )
        conn.executemany(
            "INSERT INTO events SELECT ?, seq, data FROM events WHERE session_id = 'seed'",
            [(f"s{i:06d}",) for i in range(n)],
        )
    conn.close()
    return str(file_root), f"sqlite://{db}"


async def pages(url: str, rounds: int) -> dict[str, float]:
    store = open_store(url)
    t0 = time.perf_counter()
    everything = await store.list()
    whole = time.perf_counter() - t0
    await store.list_page(50)  # the kept store's first look
    warm = []
    for r in range(rounds):
        await store.append(f"s{r:06d}", [AssistantMessage(text="moves it up")])
        t0 = time.perf_counter()
        page = await store.list_page(50)
        warm.append(time.perf_counter() - t0)
        assert page[0].id == f"s{r:06d}" and len(page) == 50
    deep = []
    for _ in range(rounds):
        mid = everything[len(everything) // 2]
        t0 = time.perf_counter()
        page = await store.list_page(50, (mid.updated_at, mid.id))
        deep.append(time.perf_counter() - t0)
    await store.close()
    cold = []
    for _ in range(5):
        other = open_store(url)
        t0 = time.perf_counter()
        await other.list_page(50)
        cold.append(time.perf_counter() - t0)
        await other.close()
    return {
        "page": statistics.median(warm),
        "deep": statistics.median(deep),
        "cold": statistics.median(cold),
        "list": whole,
    }


async def file_worst_cases(root: str) -> dict[str, float]:
    """A new store object's first page with the tail just under its limit (the most
    a page reads before a compaction), and on a format-1 index (an older version's:
    unsorted, no header), which that page rewrites sorted: once per store."""
    index = Path(root) / "index.jsonl"
    data = index.read_bytes()
    region = file_index.region_of(data[: data.index(b"\n") + 1])
    assert region is not None
    loaded = file_index.parse(data)
    assert loaded is not None
    sessions = sorted(loaded.sessions.values(), key=lambda i: i.id)
    tail, newest, n = [], time.time(), 0
    room = min(file_index.TAIL_LIMIT - 400, (region.lines // 4 + 98) * 60)
    while sum(map(len, tail)) < room and len(tail) < region.lines // 4 + 98:
        info = sessions[n * 7919 % len(sessions)]
        info.updated_at = newest + n  # written again, as a write moves it up
        tail += [b'["?","%s"]\n' % info.id.encode(), file_index.info_line(info)]
        n += 1
    index.write_bytes(data[: region.end] + b"".join(tail))
    assert not file_index.parse(index.read_bytes()).loose  # so no page compacts it
    full = []
    for _ in range(5):
        store = open_store(root)
        t0 = time.perf_counter()
        page = await store.list_page(50)
        full.append(time.perf_counter() - t0)
        await store.close()
        assert page[0].updated_at == newest + n - 1 and len(page) == 50
    assert len(index.read_bytes()) == region.end + sum(map(len, tail))  # not compacted
    ordered = sorted(loaded.sessions.values(), key=lambda i: i.id)  # not by time
    index.write_bytes(b"".join(file_index.info_line(i) for i in ordered))
    store = open_store(root)
    t0 = time.perf_counter()
    await store.list_page(50)
    upgrade = time.perf_counter() - t0
    await store.close()
    assert index.read_bytes().startswith(b'["#",2,')
    return {"full tail": statistics.median(full), "format 1": upgrade, "tail lines": 2 * n}


async def build_long(work: Path, events: int) -> tuple[str, str]:
    from agent_host.session.state import SessionState

    urls = (str(work / "long-file"), f"sqlite://{work / 'long.db'}")
    batch = 500  # turns (4 events each) per append
    for url in urls:
        store = open_store(url)
        for start in range(0, events // 4, batch):
            turns = range(start, min(start + batch, events // 4))
            await store.append("long", [e for i in turns for e in turn_events(i)])
        state = SessionState(store, "long")
        await state.refresh(full=False)  # writes the snapshot, as a turn end does
        assert (await store.read_snapshot("long", 16)) is not None
        await store.close()
    return urls


async def headers(urls: tuple[str, str], rounds: int) -> dict[str, float]:
    from agent_host.session import resume_snapshot

    times: dict[str, list[float]] = {"file": [], "sqlite": []}
    for r in range(rounds):
        for name, url in sorted(zip(times, urls, strict=True), reverse=r % 2 == 1):
            store = open_store(url)
            t0 = time.perf_counter()
            loaded = await resume_snapshot.load(store, "long")
            times[name].append(time.perf_counter() - t0)
            assert loaded is not None and loaded.fold is None
            await store.close()
    return {k: statistics.median(v) for k, v in times.items()}


async def turn_ends(url: str, session_id: str, rounds: int) -> dict[str, float]:
    from agent_host.session.events import TurnEnd
    from agent_host.session.state import SessionState

    store = open_store(url)
    state = SessionState(store, session_id)
    await state.refresh(full=False)
    await state.messages()  # what the turn reads first
    times: dict[str, list[float]] = {"segment": [], "whole": []}
    # The segments first: a whole write's hundreds of MB would weigh on the next.
    for r, kind in enumerate(["segment"] * rounds + ["whole"] * 3):
        if kind == "whole":
            state._stored = None  # as before segments: the snapshot written whole
        events = [*turn_events(1_000_000 + r), TurnEnd(stop_reason="end_turn")]
        t0 = time.perf_counter()
        await state.append(events)
        times[kind].append(time.perf_counter() - t0)
    await store.close()
    return {k: statistics.median(v) for k, v in times.items()}


async def build_short(work: Path, events: int) -> None:
    from agent_host.session.state import SessionState

    for url in (str(work / "long-file"), f"sqlite://{work / 'long.db'}"):
        store = open_store(url)
        await store.append("short", [e for i in range(events // 4) for e in turn_events(i)])
        await SessionState(store, "short").refresh(full=False)
        await store.close()


def line(name: str, value: float, peer: float | None, peer_name: str, target: str) -> None:
    ratio = f"{value / peer:6.2f}x" if peer else "       "
    peer_text = f"{peer_name} {peer * 1e3:9.2f} ms" if peer else " " * (len(peer_name) + 13)
    print(f"  {name:<44} {value * 1e3:9.2f} ms  {peer_text}  {ratio}  {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--only", default="pages,header,turnend")
    args = parser.parse_args()
    base = args.dir or default_base()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="p13-", dir=base))
    print(f"P13 pages by key ({args.sessions:,} sessions), resume header ({args.events:,} events)")
    print(f"  agent_host at {git_state()}; load average {load_average()}")
    try:
        if "pages" in args.only:
            file_url, sqlite_url = asyncio.run(build_sessions(work, args.sessions))
            for name, url in (("file", file_url), ("sqlite", sqlite_url)):
                got = asyncio.run(pages(url, args.rounds))
                line(
                    f"{name}: list_page(50), store kept open",
                    got["page"],
                    got["list"],
                    "list()",
                    "target <= 5 ms",
                )
                line(f"{name}:   a page from the middle", got["deep"], got["list"], "list()", "")
                line(
                    f"{name}:   first page of a new store object",
                    got["cold"],
                    got["list"],
                    "list()",
                    "target <= 5 ms",
                )
                if name == "file":
                    worst = asyncio.run(file_worst_cases(url))
                    line(
                        f"file:   tail at its limit ({worst['tail lines']:,} lines)",
                        worst["full tail"],
                        got["list"],
                        "list()",
                        "target <= 5 ms",
                    )
                    line(
                        "file:   a format-1 index (rewritten)",
                        worst["format 1"],
                        got["list"],
                        "list()",
                        "once per store",
                    )
        if "header" in args.only or "turnend" in args.only:
            t0 = time.perf_counter()
            urls = asyncio.run(build_long(work, args.events))
            print(
                f"  (built the {args.events:,}-event session in {time.perf_counter() - t0:.0f} s)"
            )
            snap = os.path.getsize(work / "long-file" / "snapshots" / "long.snap")
        if "header" in args.only:
            got = asyncio.run(headers(urls, 9))
            line(
                f"sqlite: resume header, snapshot {snap / 1e6:.0f} MB",
                got["sqlite"],
                got["file"],
                "file store",
                "target <= 2x",
            )
        if "turnend" in args.only:
            short = args.events // 100
            asyncio.run(build_short(work, short))
            for name, url in zip(("file", "sqlite"), urls, strict=True):
                small = asyncio.run(turn_ends(url, "short", 9))
                big = asyncio.run(turn_ends(url, "long", 9))
                line(
                    f"{name}: turn end, {args.events:,} events",
                    big["segment"],
                    small["segment"],
                    f"{short:,} events",
                    "target <= 2x",
                )
                line(
                    f"{name}:   written whole (before segments)",
                    big["whole"],
                    small["whole"],
                    f"{short:,} events",
                    "for reference",
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
