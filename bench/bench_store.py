#!/usr/bin/env python
"""Session store benchmarks: our stores against the OpenAI Agents SDK's SQLiteSession.

    python bench/bench_store.py            # full run (~1-3 min once the P3 cache exists)
    python bench/bench_store.py --quick    # fewer iterations
    python bench/bench_store.py --dir D    # where the files go (default: see below)

P1  durable append of one 4-event turn to an existing session
    (ours: file store, sqlite store; peer: SQLiteSession.add_items; floor: write+fsync)
P2  load a 1,000-turn (4,000-event) session into model messages from a cold store object,
    from its resume snapshot (ours: file and sqlite stores; peer: SQLiteSession.get_items)
P3  list() over 10,000 sessions, against a bare os.scandir of the sessions folder

Every file of one run lives under one directory on one filesystem (the default is a
folder in the temp dir when that is on the repo's filesystem, else beside the repo).
The 10,000 sessions of P3 are created once through the store API and cached under
that directory (``--fresh`` rebuilds them). See docs/performance.md for a reading.

This file runs them; each lives in its own module (bench_store_p1.py, _p2, _p3), with
what they share in bench_store_common.py and what bench_server.py shares too in
bench_common.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from bench_common import default_base, filesystem_of, git_state, load_average
from bench_store_common import Row, print_section
from bench_store_p1 import bench_append
from bench_store_p2 import TURNS, bench_load
from bench_store_p3 import SESSIONS, bench_list

# --------------------------------------------------------------------------- main

RESULTS: list[tuple[str, list[Row]]] = []


def header(base: Path, args: argparse.Namespace) -> None:
    import agents

    print("agent_host session store benchmarks" + (" (--quick)" if args.quick else ""))
    print(f"  python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"  sqlite {sqlite3.sqlite_version}, openai-agents {getattr(agents, '__version__', '?')}")
    fs = filesystem_of(base)
    print(f"  files under {base} ({fs}); OS page cache warm for every contender")
    if fs.split()[1:2] in (["tmpfs"], ["ramfs"]):
        print("  WARNING: a RAM filesystem: fsync costs nothing here, so P1 measures no disk")
    print(f"  agent_host at {git_state()}; load average {load_average()}")
    print("  times are wall clock per operation (time.perf_counter), round-robin interleaved;")
    print("  gc.freeze() after setup, so full collections do not scan the peer SDK's imports")


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
        f"\n{passed}/{len(rows)} targets met (rows marked extra are for show); "
        f"{time.perf_counter() - started:.0f}s in all; "
        f"load average now {load_average()}"
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
