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
    spawn, both servers), before/after ``session/resume`` of a 100,000-event session
    built beforehand through the store API (and a ``session/history`` page after it),
    and one server holding 20 such sessions.
P10 ``session/send`` on a resumed 10,000-turn session: the time until its model request
    has arrived whole at a loopback OpenAI-protocol server in this process; against the
    same request posted by a bare ``http.client`` (the floor).

Each server gets its own store folder under one run directory (default: a folder in the
temp dir when that is on the repo's filesystem, else beside the repo). See
docs/performance.md for the current figures and what limits each.

This file runs them; each lives in its own module (bench_server_p5.py, _p6, _p8, _p10, and
P6's profile in _p6_profile), with what they share in bench_server_common.py and what
bench_store.py shares too in bench_common.py.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_common import default_base, git_state, load_average
from bench_server_common import Row, Samples, print_section
from bench_server_p5 import bench_cold_start, importtime_report
from bench_server_p6 import DELTAS, bench_relay
from bench_server_p6_profile import relay_report
from bench_server_p8 import bench_memory, memory_report
from bench_server_p10 import TURNS as P10_TURNS
from bench_server_p10 import bench_send_latency

# --------------------------------------------------------------------------- main

RESULTS: list[tuple[str, list[Row]]] = []


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
    print(f"  files under {base}; agent_host at {git_state()}")
    print(f"  load average at start: {load_average()}")
    print(
        "  p90* = the bad-side 90th percentile: p90 of times and sizes, p10 of rates; "
        "MiB = 2^20 bytes"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer spawns and relays")
    parser.add_argument("--dir", help="where to put the stores (one filesystem for the run)")
    parser.add_argument("--only", help="comma-separated subset of p5,p6,p8,p10")
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
    only = set(args.only.split(",")) if args.only else {"p5", "p6", "p8", "p10"}
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
        if "p10" in only:
            n = 3 if args.quick else 7
            RESULTS.append(
                (
                    f"P10 session/send on a resumed {P10_TURNS:,}-turn session to its model "
                    f"request ({n} servers)",
                    bench_send_latency(work, n),
                )
            )
            print_section(*RESULTS[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [r for _, section in RESULTS for r in section if r.targets()]
    passed = sum(all(ok for _, ok in r.targets()) for r in rows)
    print(
        f"\nserver: {passed}/{len(rows)} targets met; {time.perf_counter() - started:.0f}s in all; "
        f"load average at end: {load_average()}"
    )


if __name__ == "__main__":
    main()
