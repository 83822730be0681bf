"""P3: list() over 10,000 sessions, against a bare os.scandir of the sessions folder.

The sessions are made once through the store API and cached (see ensure_list_cache)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_store_common import Contender, Row, round_robin

from agent_host.session import open_store
from agent_host.session.events import AssistantMessage, UserPrompt

CACHE_VERSION = 1  # bump when the cached P3 data set changes shape

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
