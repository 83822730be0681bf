#!/usr/bin/env python
"""P14 gc of 10,000 sessions (issue 27), beside a raw read of the blob index and the
session list in the same run.

    python bench/bench_store_p14.py [--sessions 10000] [--blobs 20000] [--dir D]

Each session is a 10-turn session with a file snapshot per turn (one made through
the API, copied: its log and index line on the file store, its rows on SQLite), and
the blob store holds ``--blobs`` blobs of 1-4 KB. Timed, median of 5: the first
``collect_garbage`` (no cache: it reads every log), the next one with nothing
changed, and one after 100 sessions each got a new turn; floor: ``list()`` plus a
bare read of every blob's id and time (``os.scandir`` of the blob folders and a
stat of each loose file, each batch's and pack's index and time; the SQLite
``blobs`` table's id and touched_at). The file store's blobs are put 500 at a time:
40 batches, as captures leave them (before gc retires them into packs).
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

from agent_host.session import collect_garbage, open_store
from agent_host.session.events import AssistantMessage, FileSnapshot, UserPrompt
from agent_host.session.store import file_index
from agent_host.session.store.info import SessionInfo


async def build(work: Path, sessions: int, blobs: int) -> tuple[str, str]:
    file_root, db = work / "gc-file", work / "gc.db"
    urls = (str(file_root), f"sqlite://{db}")
    for url in urls:
        store = open_store(url)
        ids = []
        for start in range(0, blobs, 500):
            datas = [os.urandom(1024 + i % 3072) for i in range(start, min(blobs, start + 500))]
            ids += await store.blobs.put_many(datas)
        events: list = []
        for turn in range(10):
            events += [
                UserPrompt(text=f"turn {turn}"),
                FileSnapshot(path=f"f{turn}.py", before=ids[2 * turn], after=ids[2 * turn + 1]),
                AssistantMessage(text="done"),
            ]
        await store.append("seed", events)
        await store.close()
    log = (file_root / "sessions" / "seed.jsonl").read_bytes()
    loaded = file_index.parse((file_root / "index.jsonl").read_bytes())
    assert loaded is not None
    (seed,) = loaded[0].values()
    lines = [file_index.info_line(seed)]
    for i in range(sessions - 1):
        sid = f"s{i:05d}"
        (file_root / "sessions" / f"{sid}.jsonl").write_bytes(log)
        info = SessionInfo(sid, seed.created_at, seed.updated_at, seed.head, seed.turns, "", "")
        lines.append(file_index.info_line(info))
    (file_root / "index.jsonl").write_bytes(b"".join(lines))
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO sessions SELECT ?, created_at, updated_at, head, turns, title, "
            "workspace FROM sessions WHERE id = 'seed'",
            [(f"s{i:05d}",) for i in range(sessions - 1)],
        )
        conn.executemany(
            "INSERT INTO events SELECT ?, seq, data FROM events WHERE session_id = 'seed'",
            [(f"s{i:05d}",) for i in range(sessions - 1)],
        )
    conn.close()
    return urls


def raw_blob_index(url: str) -> int:
    if url.startswith("sqlite://"):
        conn = sqlite3.connect(url.removeprefix("sqlite://"))
        n = len(conn.execute("SELECT id, touched_at FROM blobs").fetchall())
        conn.close()
        return n
    from agent_host.session.blob_packs import _read_index

    n = 0
    for prefix in os.scandir(Path(url) / "blobs"):
        if prefix.name in ("batches", "packs"):  # each pack: its time, its index
            for pack in os.scandir(prefix.path):
                pack.stat()
                n += len(_read_index(Path(pack.path)))
            continue
        for entry in os.scandir(prefix.path):
            entry.stat()
            n += 1
    return n


async def run(url: str, rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"first": [], "same": [], "grown": [], "floor": []}
    cache = None
    for r in range(rounds):
        store = open_store(url)
        cache = store.gc_cache
        if r == 0 or cache is None:
            pass
        else:
            cache.unlink(missing_ok=True)
        t0 = time.perf_counter()
        await collect_garbage(store)
        times["first"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await collect_garbage(store)
        times["same"].append(time.perf_counter() - t0)
        for i in range(100):
            await store.append(f"s{(r * 100 + i):05d}", [UserPrompt(text="more")])
        t0 = time.perf_counter()
        await collect_garbage(store)
        times["grown"].append(time.perf_counter() - t0)
        await store.close()
        store = open_store(url)
        t0 = time.perf_counter()
        await store.list()
        raw_blob_index(url)
        times["floor"].append(time.perf_counter() - t0)
        await store.close()
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--blobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = args.dir or default_base()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="p14-", dir=base))
    print(f"P14 gc of {args.sessions:,} sessions, {args.blobs:,} blobs")
    print(f"  agent_host at {git_state()}; load average {load_average()}")
    try:
        urls = asyncio.run(build(work, args.sessions, args.blobs))
        for name, url in zip(("file", "sqlite"), urls, strict=True):
            got = asyncio.run(run(url, args.rounds))
            floor = got["floor"]
            print(f"  {name}: floor list() + raw blob index read {floor * 1e3:8.1f} ms")
            for key, label in (
                ("first", "gc, no cache (reads every log)"),
                ("same", "gc, nothing changed since the last"),
                ("grown", "gc after 100 sessions got a turn"),
            ):
                ratio = got[key] / floor
                verdict = (
                    "" if key == "first" else f"target <= 3x: {'met' if ratio <= 3 else 'missed'}"
                )
                print(f"  {name}: {label:<36} {got[key] * 1e3:8.1f} ms  {ratio:6.2f}x  {verdict}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
