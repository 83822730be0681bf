#!/usr/bin/env python
"""P12 storage of snapshots (issue 27): 100 turns, each editing one line of each of 10
files of 4 KB, stored as the engine stores them (the blobs of a turn in one put_many),
against the same turns committed to a git repository (loose objects, then packed by
``git gc``), in one run.

    python bench/bench_store_p12.py [--turns 100] [--files 10] [--dir D]

Reported: the bytes each store grew by (``du -sb``: the same measure for both, folders
included), per turn and in all; ours on the file store and the SQLite store, as the
turns leave them (beside git's loose objects) and after ``collect_garbage`` packed the
versions as deltas (beside git's packed objects after ``git gc``); and, for the choice
of blob_codec.LEVEL, the stored size and compression time of each zstd level on the
same contents.

Each turn's snapshots are recorded as the engine records them (a FileSnapshot event
per file, before -> after), so gc finds the pairs it packs. Its grace period is 0
here: at the default (an hour) the loose copies of what was just packed stay until
a later gc. The SQLite figure is the pages of its blob tables and their index
(``dbstat``; the whole file where SQLite has none), as the file store's is its blobs
folder; the whole database file, its event log included, is printed after gc too.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import default_base, git_state, load_average

WORDS = (
    "def return self value None import from class if else for in while try except "
    "raise with as async await lambda yield assert pass break continue path data "
    "items result config session event store append read list index offset"
).split()


def code_like(n: int, rng: random.Random) -> list[str]:
    """Lines of about ``n`` characters of source-looking text."""
    lines, size = [], 0
    while size < n:
        indent = "    " * rng.randrange(3)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 9)))
        lines.append(f'{indent}{words}("{rng.choice(WORDS)}")')
        size += len(lines[-1]) + 1
    return lines


def versions(turns: int, files: int, size: int) -> list[list[bytes]]:
    """Per turn, the content of each file after it: one line of each file changed."""
    rng = random.Random(27)
    texts = [code_like(size, rng) for _ in range(files)]
    out = []
    for turn in range(turns):
        for lines in texts:
            lines[rng.randrange(len(lines))] = f"    value = compute({turn}, {rng.random():.6f})"
        out.append([("\n".join(lines) + "\n").encode() for lines in texts])
    return out


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


async def ours(kind: str, work: Path, turns: list[list[bytes]]) -> tuple[int, int, float, float]:
    """The store's size after the turns and after gc; the time to store, to gc."""
    from agent_host.session import collect_garbage, open_store
    from agent_host.session.events import FileSnapshot, UserPrompt

    where = work / f"store-{kind}"
    url = str(where) if kind == "file" else f"sqlite://{where}.db"

    def size() -> int:
        if kind == "file":
            return du(where / "blobs")
        return sqlite_blob_pages(Path(f"{where}.db"))

    store = open_store(url)
    # The first turn's files exist before it: their before-blobs are stored too.
    t0 = time.perf_counter()
    previous: list[str | None] = [None] * len(turns[0])
    for contents in turns:
        ids = await store.blobs.put_many(contents)
        events: list = [UserPrompt(text="turn")]
        for i, (before, after) in enumerate(zip(previous, ids, strict=True)):
            events.append(FileSnapshot(path=f"f{i}.py", before=before, after=after))
        await store.append("study", events)
        previous = list(ids)
    elapsed = time.perf_counter() - t0
    await store.close()
    stored = size()
    store = open_store(url)
    t0 = time.perf_counter()
    await collect_garbage(store, grace_seconds=0)
    gc_s = time.perf_counter() - t0
    for n, contents in enumerate(turns):  # every version still reads back
        kept, bad = await store.blobs.read_checked(map(blob_id, contents), 1 << 30)
        assert bad == {} and list(kept.values()) == contents, n
    await store.close()
    if kind == "sqlite":
        whole = Path(f"{where}.db").stat().st_size
        print(f"  sqlite database file after gc, its event log included: {whole / 1e3:.0f} KB")
    return stored, size(), elapsed, gc_s


def sqlite_blob_pages(db_path: Path) -> int:
    """The bytes of the pages of the SQLite store's blob tables and their index
    (``dbstat``): its blobs alone, as the file store's blobs folder is. The whole
    file where SQLite has no dbstat."""
    import sqlite3

    with sqlite3.connect(db_path) as db:
        try:
            (pages,) = db.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name IN "
                "('blobs', 'blob_bases', 'sqlite_autoindex_blobs_1')"
            ).fetchone()
        except sqlite3.OperationalError:
            return db_path.stat().st_size
    return int(pages)


def blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def git_run(work: Path, turns: list[list[bytes]]) -> tuple[int, int]:
    ws, git_dir = work / "ws", work / "shadow.git"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    for key, value in (("gc.auto", "0"), ("user.name", "b"), ("user.email", "b@b")):
        subprocess.run(["git", f"--git-dir={git_dir}", "config", key, value], check=True)
    objects = git_dir / "objects"
    empty = du(objects)
    for contents in turns:
        for i, data in enumerate(contents):
            (ws / f"f{i}.py").write_bytes(data)
        for args in (["add", "-A"], ["commit", "-q", "--no-verify", "-m", "turn"]):
            subprocess.run(["git", f"--git-dir={git_dir}", f"--work-tree={ws}", *args], check=True)
    loose = du(objects) - empty
    subprocess.run(["git", f"--git-dir={git_dir}", "gc", "-q"], check=True)
    packed = du(objects) - empty
    return loose, packed


async def batch_syncs(work: Path, turns: list[list[bytes]]) -> dict[str, float]:
    """Median time to store one turn's 10 new blobs on the file store: as one batch
    (one pack: an fsync of it and of its folder) and, as before, each with an fsync
    pair; round robin."""
    from agent_host.session import blobs

    kept = blobs._SYNC_EACH_MAX
    stores = {
        "batch": blobs.FileBlobStore(work / "batch"),
        "each": blobs.FileBlobStore(work / "each"),
    }
    times: dict[str, list[float]] = {k: [] for k in stores}
    try:
        for i, contents in enumerate(turns[:40]):
            for name in sorted(stores, reverse=i % 2 == 1):
                blobs._SYNC_EACH_MAX = 1 if name == "batch" else len(contents)
                t0 = time.perf_counter()
                await stores[name].put_many(contents)
                times[name].append(time.perf_counter() - t0)
    finally:
        blobs._SYNC_EACH_MAX = kept
    return {k: statistics.median(v) for k, v in times.items()}


def levels(turns: list[list[bytes]]) -> None:
    import zstandard

    contents = [d for turn in turns for d in turn]
    raw = sum(map(len, contents))
    print(f"  zstd levels over {len(contents)} contents, {raw / 1e3:.0f} KB raw:")
    for level in (1, 3, 6, 9, 19):
        c = zstandard.ZstdCompressor(level=level)
        t0 = time.perf_counter()
        size = sum(len(c.compress(d)) for d in contents)
        ms = (time.perf_counter() - t0) * 1e3
        print(f"    level {level:>2}: {size / 1e3:7.0f} KB ({size / raw:.1%}), {ms:6.1f} ms")


def row(name: str, value: int, peer: int, peer_name: str, target: float) -> None:
    ratio = value / peer
    verdict = "met" if ratio <= target else "missed"
    print(
        f"  {name:<34} {value / 1e3:8.0f} KB  {peer_name} {peer / 1e3:6.0f} KB  "
        f"{ratio:5.2f}x  (target <= {target}x: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = args.dir or default_base()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="p12-", dir=base))
    try:
        print(f"P12 storage of {args.turns} turns x {args.files} files x {args.size} B")
        print(f"  agent_host at {git_state()}; {subprocess.getoutput('git --version')}")
        print(f"  load average {load_average()}; files under {work}")
        turns = versions(args.turns, args.files, args.size)
        file_size, file_gc, file_s, file_gc_s = asyncio.run(ours("file", work, turns))
        sqlite_size, sqlite_gc, sqlite_s, sqlite_gc_s = asyncio.run(ours("sqlite", work, turns))
        loose, packed = git_run(work, turns)
        n = len(turns)
        per_turn = f"file store {file_size / n / 1e3:.1f} KB, git loose {loose / n / 1e3:.1f} KB"
        print(f"  per turn: {per_turn}")
        row("file store vs git loose objects", file_size, loose, "git loose", 1.2)
        row("file store after gc vs git packed", file_gc, packed, "git packed", 3.0)
        row("sqlite store vs git loose objects", sqlite_size, loose, "git loose", 1.2)
        row("sqlite store after gc vs git packed", sqlite_gc, packed, "git packed", 3.0)
        print(f"  time to store: file {file_s * 1e3:.0f} ms, sqlite {sqlite_s * 1e3:.0f} ms")
        gc_ms = f"file {file_gc_s * 1e3:.0f} ms, sqlite {sqlite_gc_s * 1e3:.0f} ms"
        print(f"  time to gc (reads the log, packs): {gc_ms}")
        syncs = asyncio.run(batch_syncs(work, versions(40, args.files, args.size)))
        print(
            f"  one turn's {args.files} new blobs, file store: one batch (one pack) "
            f"{syncs['batch'] * 1e3:.1f} ms, an fsync pair each {syncs['each'] * 1e3:.1f} ms "
            f"({syncs['batch'] / syncs['each']:.2f}x)"
        )
        levels(turns)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
