#!/usr/bin/env python
"""Where the file store's time goes in the operations bench_store.py times.

    python bench/profile_store.py append   # P1: append one 4-event turn
    python bench/profile_store.py load     # P2: to_messages(read()) of 4,000 events, cold store
    python bench/profile_store.py list     # P3: list() over the cached 10,000 sessions
    options: --iterations N, --dir D (as bench_store.py), --cprofile (instead of pyinstrument),
             --store sqlite (profile the sqlite store instead)

The store's worker-thread hop (asyncio.to_thread) is replaced by a direct call so that
the profiler, which watches the main thread, sees the store's own work; the hop itself
costs what bench_store.py's "floor via asyncio.to_thread" row shows over the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import default_base  # noqa: E402
from bench_store_common import turn_events  # noqa: E402
from bench_store_p2 import TURNS  # noqa: E402
from bench_store_p3 import ensure_list_cache  # noqa: E402

from agent_host.session import open_store  # noqa: E402
from agent_host.session.conversation import to_messages  # noqa: E402


async def _inline(fn, /, *args, **kwargs):
    return fn(*args, **kwargs)


def _url(kind: str, root: Path) -> str:
    return root.as_uri() if kind == "file" else f"sqlite://{root}.db"


async def prepare(op: str, kind: str, work: Path, base: Path):
    """An async callable doing one operation, and how many events/sessions it touches."""
    if op == "append":
        store = open_store(_url(kind, work / "append"))
        await store.append("p", turn_events(0))
        turns = iter(range(1, 10**9))

        async def one() -> None:
            await store.append("p", turn_events(next(turns)))

        return one
    if op == "load":
        url = _url(kind, work / "load")
        store = open_store(url)
        for start in range(0, TURNS, 50):
            await store.append("p", [e for i in range(start, start + 50) for e in turn_events(i)])
        await store.close()

        async def one() -> None:
            cold = open_store(url)
            to_messages(await cold.read("p"))
            await cold.close()

        return one
    if op == "list":
        file_root, sqlite_db = await ensure_list_cache(base, fresh=False)
        store = open_store(file_root.as_uri() if kind == "file" else f"sqlite://{sqlite_db}")
        await store.list()

        async def one() -> None:
            await store.list()

        return one
    raise SystemExit(f"unknown operation {op!r}: append, load or list")


async def main_async(args: argparse.Namespace) -> None:
    base = Path(args.dir).expanduser().absolute() if args.dir else default_base()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="profile-", dir=base))
    try:
        await profile(args, work, base)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def profile(args: argparse.Namespace, work: Path, base: Path) -> None:
    one = await prepare(args.operation, args.store, work, base)
    asyncio.to_thread = _inline  # the store's work shows up in this thread's profile
    n = args.iterations or {"append": 300, "load": 20, "list": 50}[args.operation]
    for _ in range(3):
        await one()
    gc.collect()
    gc.freeze()
    if args.cprofile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        for _ in range(n):
            await one()
        prof.disable()
        elapsed = time.perf_counter() - t0
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    else:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0001)
        t0 = time.perf_counter()
        profiler.start()
        for _ in range(n):
            await one()
        profiler.stop()
        elapsed = time.perf_counter() - t0
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    print(
        f"{args.store} {args.operation}: {n} iterations, {elapsed / n * 1e3:.3f} ms each "
        "under the profiler (no thread hop)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("operation", choices=["append", "load", "list"])
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--dir")
    parser.add_argument("--store", choices=["file", "sqlite"], default="file")
    parser.add_argument("--cprofile", action="store_true")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
