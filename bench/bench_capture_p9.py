#!/usr/bin/env python
"""P9: what capturing a command's changes costs, on workspaces of 10,000 and 100,000 files.

    python bench/bench_capture_p9.py                        # 10k/200 MB and 100k/400 MB
    python bench/bench_capture_p9.py --sizes 2000:40 --repeats 5   # quick
    python bench/bench_capture_p9.py --quick                # 10k/200 MB only, 7 repeats

One workspace per size (files:megabytes): source-like files in nested folders (sizes
drawn log-normal), with a root .gitignore as a repository has; written, synced, and
left 3.5 s so no file is within the index's racy window.

First index: a fresh watching WorkspaceIndex over a fresh FileBlobStore, timed
through its first ``refresh()`` (the first index, which reads and stores every file,
and one pass after it), against the peer's first checkpoint, ``git add -A`` (and
then ``git commit -q``) into a fresh git dir whose work tree is the workspace, as a
Cline-style shadow repository does (its gc.auto off). Every contender starts after
an os.sync(), so none pays for another's writes.

Steady state, the P9 figure: a round is ``refresh()``, a command through
DiskWorkspace (the real shell path) that appends to 10 files, ``changes()``; the
overhead is refresh + changes. Contenders, rotated each round, each with 10 files of
its own: the watching index (inotify events drained, the named paths lstat'ed); the
same over a MemoryBlobStore (the capture's own cost, without the blob store's syncs); the
same index walking (``watch=False``: the stat walk every pass, the fallback); the
floors -- an inotify drain of the same command's events (watches on every folder,
inotify_simple's read), a bare stat walk (os.scandir recursion and an lstat of
every entry), and the floor of storing 10 files' contents durably (10 files of the
workspace, read and written to one new file with one fsync; and one syncfs(2) of the
blob store's filesystem after an os.sync(), i.e. with nothing to write); and the
peer's checkpoint, ``git add -A && git commit -q``. Before each contender's round an
untimed refresh takes in what the others' commands changed, and the timed round
follows at once: files the commands changed are racy (read within a tick of their
change: their entries smudged, see capture_diff.SMUDGED), which a watched pass does
not read again unless an event names them; how many there are is printed. The file blob store's
``put_many`` of ``changes()`` (its 10 blobs: one batch pack, an fsync of it and of
its folder) is timed within the watched rounds.

Storage (first size only): after the first index, 5 turns each change 10 files by
commands (sed -i); each turn is captured by both. Reported: how many bytes the blob
store and the shadow git dir grew (``du -sb``).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import stat
import subprocess
import time
from pathlib import Path

from bench_common import (
    filesystem_of,
    fmt_ms,
    git_state,
    io_pressure,
    load_average,
    machine,
    quantile,
    run_in,
    work_dir,
)

# The header helpers P4 prints with; shared rather than copied.

GITIGNORE = "*.pyc\n*.log\n*.tmp\n.env\n/coverage/\n*.egg-info/\n.DS_Store\n/scratch/\n"
WARMUP = 1

# --------------------------------------------------------------------------- data

_WORDS = (
    "def return self value None import from class if else for in while try except "
    "raise with as async await lambda yield assert pass path data items result config"
).split()


def corpus(size: int) -> bytes:
    """``size`` bytes of source-looking ASCII lines, to cut files from."""
    rng = random.Random("p9-corpus")
    lines, n = [], 0
    while n < size:
        indent = "    " * rng.randrange(3)
        line = indent + " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 9)))
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines).encode()[:size]


def rel(i: int) -> str:
    """20 packages x 10 modules x 5 subfolders (x 10 parts past 10,000 files): 10
    files a folder, three or four deep."""
    part = f"/part{i // 10_000}" if i >= 10_000 else ""
    return f"pkg{i % 20:02d}/mod{(i // 20) % 10}/sub{(i // 200) % 5}{part}/file_{i:06d}.py"


def generate(ws: Path, files: int, total: int) -> int:
    """The workspace: ``files`` files of ``total`` bytes in all. Returns the bytes."""
    rng = random.Random("p9-sizes")
    weights = [rng.lognormvariate(0, 1) for _ in range(files)]
    scale = total / sum(weights)
    text = corpus(4 * 1024 * 1024)
    written = 0
    for i, w in enumerate(weights):
        size = max(64, int(w * scale))
        start = rng.randrange(len(text))
        body = (text[start:] + text)[:size]  # wraps round the corpus
        path = ws / rel(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = f"# file {i}\n".encode() + body + b"\n"
        path.write_bytes(data)
        written += len(data)
    (ws / ".gitignore").write_text(GITIGNORE)
    return written


# --------------------------------------------------------------------------- contenders


def stat_walk(root: Path) -> int:
    """The floor: every entry under ``root`` listed and lstat'ed, nothing else."""
    n = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                if stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode):
                    stack.append(entry.path)
                n += 1
    return n


def git(git_dir: Path, ws: Path, *args: str) -> None:
    subprocess.run(
        ["git", f"--git-dir={git_dir}", f"--work-tree={ws}", *args],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def git_init(git_dir: Path, ws: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    # No auto gc: a first commit of 10,000 loose objects would start one in the
    # background, taking CPU from whatever is timed next and the dir from du.
    settings = {"user.name": "bench", "user.email": "b@x", "core.bare": "false", "gc.auto": "0"}
    for key, value in settings.items():
        subprocess.run(["git", f"--git-dir={git_dir}", "config", key, value], check=True)


def git_checkpoint(git_dir: Path, ws: Path) -> None:
    git(git_dir, ws, "add", "-A")
    git(git_dir, ws, "commit", "-q", "--allow-empty", "--no-verify", "-m", "checkpoint")


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def racy_entries(index) -> int:
    """How many of ``index``'s entries are racy (smudged: read again when looked at)."""
    from agent_host.session.capture_diff import SMUDGED

    return sum(1 for sig, _ in index._files.values() if sig[0] == SMUDGED) + len(index._racy)


def settle() -> None:
    """Start with nothing unwritten, so no contender's sync pays for another's writes."""
    os.sync()
    gc.collect()


async def first_ours(ws: Path, blob_dir: Path):
    from agent_host.session.blobs import FileBlobStore
    from agent_host.session.capture import WorkspaceIndex

    index = WorkspaceIndex([ws], FileBlobStore(blob_dir))
    settle()
    t0 = time.perf_counter()
    await index.refresh()
    return time.perf_counter() - t0, index


def first_git(ws: Path, git_dir: Path) -> tuple[float, float]:
    git_init(git_dir, ws)
    settle()
    t0 = time.perf_counter()
    git(git_dir, ws, "add", "-A")
    add = time.perf_counter() - t0
    git(git_dir, ws, "commit", "-q", "--no-verify", "-m", "first")
    return add, time.perf_counter() - t0


class Drain:
    """The floor of watching: inotify watches on every folder, and a drain of what a
    command queued (read and parsed, as the index's watcher reads it)."""

    def __init__(self, root: Path) -> None:
        import inotify_simple

        from agent_host.session.capture_watch import WATCH_MASK

        self.inotify = inotify_simple.INotify(nonblocking=True)
        stack = [str(root)]
        while stack:
            path = stack.pop()
            self.inotify.add_watch(path, WATCH_MASK)
            with os.scandir(path) as listing:
                stack.extend(e.path for e in listing if e.is_dir(follow_symlinks=False))

    def drain(self) -> int:
        n = 0
        while True:
            got = self.inotify.read(timeout=0)
            if not got:
                return n
            n += len(got)


# --------------------------------------------------------------------------- table


def row(
    name: str,
    times: list[float],
    ref: list[float] | None = None,
    label: str = "",
    limit: float | None = None,
) -> None:
    med = quantile(times, 0.5)
    ratio = med / quantile(ref, 0.5) if ref else None
    ratio_s = f"{ratio:.2f}x {label}" if ratio is not None else ""
    target = f"<= {limit:g}x {label}" if limit is not None else ""
    result = "" if limit is None or ratio is None else "PASS" if ratio <= limit else "MISS"
    print(
        f"{name:<56} {fmt_ms(med):>10} {fmt_ms(quantile(times, 0.9)):>9} {len(times):>4}  "
        f"{ratio_s:<22} {target:<22} {result}"
    )


# --------------------------------------------------------------------------- main


def ten_files(rng: random.Random, files: int) -> str:
    """A command that changes 10 files of the workspace (a byte appended to each)."""
    chosen = " ".join(rel(i) for i in rng.sample(range(files), 10))
    return f"for f in {chosen}; do printf x >> $f; done"


async def run_size(args: argparse.Namespace, work: Path, files: int, megabytes: int) -> dict:
    from agent_host.session.blobs import FileBlobStore, MemoryBlobStore
    from agent_host.session.capture import WorkspaceIndex
    from agent_host.session.workspace import DiskWorkspace

    ws = work / f"ws-{files}"
    ws.mkdir()
    t0 = time.perf_counter()
    total = generate(ws, files, megabytes * 1_000_000)
    os.sync()
    print(
        f"\n== {files} files, {total / 1e6:.0f} MB, written in "
        f"{time.perf_counter() - t0:.1f} s; waiting out the racy window"
    )
    time.sleep(3.5)
    entries = stat_walk(ws)

    # First index against the first shadow commit, alternating who goes first.
    first: dict[str, list[float]] = {"ours": [], "add": [], "commit": []}
    index = git_dir = blob_dir = None
    for it in range(args.first_repeats):
        order = ["ours", "git"] if it % 2 == 0 else ["git", "ours"]
        for who in order:
            if who == "ours":
                if index is not None:
                    await index.close()
                    shutil.rmtree(blob_dir)
                blob_dir = work / f"blobs-{files}-{it}"
                took, index = await first_ours(ws, blob_dir)
                first["ours"].append(took)
            else:
                if git_dir is not None:
                    shutil.rmtree(git_dir)
                git_dir = work / f"shadow-{files}-{it}.git"
                add, both = first_git(ws, git_dir)
                first["add"].append(add)
                first["commit"].append(both)
    assert index is not None and git_dir is not None and blob_dir is not None
    first_store = {"ours": du(blob_dir), "git": du(git_dir)}
    assert index.watching, "no inotify: the watched rows would be the walk"
    # The fallback, measured on the same tree and blobs: the walk every pass.
    walking = WorkspaceIndex([ws], FileBlobStore(blob_dir), watch=False)
    await walking.refresh()
    # The capture's own cost: watching, its blobs in memory (no store's fsyncs).
    in_memory = WorkspaceIndex([ws], MemoryBlobStore())
    await in_memory.refresh()
    floor = Drain(ws)
    store_times: list[float] = []
    timed_store = index._blobs
    real_put_many = timed_store.put_many

    async def put_many(datas, pin=None):
        t0 = time.perf_counter()
        try:
            return await real_put_many(datas, pin)
        finally:
            store_times.append(time.perf_counter() - t0)

    timed_store.put_many = put_many

    disk = DiskWorkspace([ws])
    racy: dict[str, list[int]] = {"watched": [], "memory": [], "walked": []}
    rng = random.Random(f"p9-rounds-{files}")
    times: dict[str, list[float]] = {
        k: []
        for k in (
            "watched",
            "w_refresh",
            "w_changes",
            "memory",
            "m_refresh",
            "m_changes",
            "walked",
            "k_refresh",
            "k_changes",
            "command",
            "drain",
            "walk",
            "write10",
            "syncfs",
            "git",
            "w_store",
        )
    }

    async def around(idx: WorkspaceIndex, key: str) -> dict[str, float]:
        await idx.refresh()  # untimed: what the other contenders' commands changed
        racy[key].append(racy_entries(idx))
        cmd = ten_files(rng, files)
        t0 = time.perf_counter()
        await idx.refresh()
        t1 = time.perf_counter()
        result = await disk.run_command(cmd)
        t2 = time.perf_counter()
        got = await idx.changes()
        t3 = time.perf_counter()
        if result.exit_code != 0 or len(got.changes) != 10 or got.not_captured:
            raise RuntimeError(f"the command's 10 changes were not captured: {got}")
        return {
            key: (t1 - t0) + (t3 - t2),
            f"{key[0]}_refresh": t1 - t0,
            f"{key[0]}_changes": t3 - t2,
            "command": t2 - t1,
        }

    async def watched() -> dict[str, float]:
        store_times.clear()
        got = await around(index, "watched")
        got["w_store"] = sum(store_times[-1:])  # the last put_many: changes()'s blobs
        return got

    async def memory() -> dict[str, float]:
        return await around(in_memory, "memory")

    async def walked() -> dict[str, float]:
        got = await around(walking, "walked")
        got["k_refresh"], got["k_changes"] = got.pop("w_refresh"), got.pop("w_changes")
        return got

    async def drain() -> dict[str, float]:
        floor.drain()
        await disk.run_command(ten_files(rng, files))
        t0 = time.perf_counter()
        n = floor.drain()
        took = time.perf_counter() - t0
        if n < 10:
            raise RuntimeError(f"the drain saw {n} events of a 10-file command")
        return {"drain": took}

    async def walk() -> dict[str, float]:
        t0 = time.perf_counter()
        if stat_walk(ws) != entries:
            raise RuntimeError("the tree changed under the stat walk")
        return {"walk": time.perf_counter() - t0}

    async def write10() -> dict[str, float]:
        datas = [(ws / rel(i)).read_bytes() for i in rng.sample(range(files), 10)]
        path = blob_dir / f"floor-{rng.getrandbits(32):08x}"
        t0 = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            for data in datas:
                os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        took = time.perf_counter() - t0
        os.unlink(path)
        return {"write10": took}

    async def syncfs_idle() -> dict[str, float]:
        import ctypes

        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
        os.sync()
        fd = os.open(blob_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            t0 = time.perf_counter()
            if syncfs(fd) != 0:
                raise OSError(ctypes.get_errno(), "syncfs")
            return {"syncfs": time.perf_counter() - t0}
        finally:
            os.close(fd)

    async def peer() -> dict[str, float]:
        await disk.run_command(ten_files(rng, files))
        t0 = time.perf_counter()
        git_checkpoint(git_dir, ws)
        return {"git": time.perf_counter() - t0}

    contenders = [watched, memory, walked, drain, walk, write10, syncfs_idle, peer]
    for it in range(WARMUP + args.repeats):
        k = it % len(contenders)
        for fn in contenders[k:] + contenders[:k]:
            gc.collect()
            got = await fn()
            if it >= WARMUP:
                for key, value in got.items():
                    times[key].append(value)
    walks_in_rounds = index.walks

    grew = None
    if args.storage:
        # Storage: 5 turns of 10 files changed by commands, captured by both.
        await index.refresh()
        git_checkpoint(git_dir, ws)
        blobs_before, git_before = du(blob_dir), du(git_dir)
        turn_changes = []
        for turn in range(5):
            chosen = " ".join(rel(i) for i in rng.sample(range(files), 10))
            await index.refresh()
            subprocess.run(
                ["sh", "-c", f"sed -i 's/return/return_{turn}/' {chosen}"], cwd=ws, check=True
            )
            got = await index.changes()
            turn_changes.append(len(got.changes))
            git_checkpoint(git_dir, ws)
        grew = {
            "ours": du(blob_dir) - blobs_before,
            "git": du(git_dir) - git_before,
            "turns": turn_changes,
        }
    await index.close()
    await walking.close()
    await in_memory.close()
    floor.inotify.close()

    head = (
        f"{'benchmark':<56} {'median ms':>10} {'p90 ms':>9} {'n':>4}  "
        f"{'ratio':<22} {'target':<22} result"
    )
    print(
        f"  {entries} entries; the watching index walked "
        f"{walks_in_rounds} times in all (the first index included)\n"
    )
    print(
        "  racy set at the timed refresh (median; a watched pass reads none of it again"
        f" unless an event names it): watching {quantile(racy['watched'], 0.5)}, "
        f"in memory {quantile(racy['memory'], 0.5)}"
    )
    print(head)
    print("-" * len(head))
    row("floor: inotify drain of a 10-file command", times["drain"])
    row(f"floor: stat walk of {entries} entries (scandir + lstat)", times["walk"])
    row("peer: git add -A && git commit (10 files changed)", times["git"])
    row("floor: 10 files written to one file + fsync", times["write10"])
    row("floor: one syncfs(2) with nothing to write", times["syncfs"])
    row("ours watching: refresh() + changes()  [P9]", times["watched"], times["git"], "git")
    absolute("  same, absolute", times["watched"], 5.0)
    row("  same, vs the drain floor", times["watched"], times["drain"], "drain")
    row("  same, vs the store floor (write + fsync)", times["watched"], times["write10"], "floor")
    row("  refresh()", times["w_refresh"])
    row("  changes()", times["w_changes"])
    row("    of it: FileBlobStore.put_many (10 blobs)", times["w_store"])
    row("ours watching, blobs in memory (capture's own cost)", times["memory"], times["git"], "git")
    absolute("  same, absolute", times["memory"], 5.0)
    row("  refresh()", times["m_refresh"])
    row("  changes()", times["m_changes"])
    row("ours walking (fallback): refresh() + changes()", times["walked"], times["walk"], "walk")
    row("  same, vs watching", times["walked"], times["watched"], "watching")
    row("  refresh()", times["k_refresh"])
    row("  changes()", times["k_changes"])
    row("the command, through run_command", times["command"])
    row("first index: refresh() of a fresh index", first["ours"], first["add"], "git add", 2.0)
    row("peer first: git add -A", first["add"])
    row("peer first: git add -A && git commit", first["commit"], first["add"], "git add")
    mb = 1e6
    print(
        f"\nstorage after the first index: blob store {first_store['ours'] / mb:.1f} MB, "
        f"shadow git dir {first_store['git'] / mb:.1f} MB "
        f"({first_store['ours'] / first_store['git']:.2f}x)"
    )
    if grew is not None:
        print(
            f"storage grown by 5 turns of 10 files changed (changes captured per turn: "
            f"{grew['turns']}): blob store +{grew['ours'] / 1e3:.0f} KB, shadow git dir "
            f"+{grew['git'] / 1e3:.0f} KB ({grew['ours'] / max(grew['git'], 1):.2f}x)"
        )
    shutil.rmtree(ws, ignore_errors=True)
    return times


def absolute(name: str, times: list[float], limit_ms: float) -> None:
    med = quantile(times, 0.5) * 1e3
    print(
        f"{name:<56} {med:>10.2f} {'':>9} {'':>4}  {'':<22} "
        f"{f'<= {limit_ms:g} ms':<22} {'PASS' if med <= limit_ms else 'MISS'}"
    )


async def run(args: argparse.Namespace, work: Path) -> None:
    results = []
    for n, (files, megabytes) in enumerate(args.sizes):
        args.storage = n == 0
        results.append((files, await run_size(args, work, files, megabytes)))
    print("\n== P9 targets, watching")
    for files, times in results:
        ours, git_ = quantile(times["watched"], 0.5), quantile(times["git"], 0.5)
        limit = 0.1 if files <= 10_000 else 0.02
        own = quantile(times["memory"], 0.5)
        print(
            f"  {files:>7} files, blobs in memory: {own * 1e3:.2f} ms (<= 5 ms: "
            f"{'PASS' if own * 1e3 <= 5 else 'MISS'}); {own / git_:.4f}x git "
            f"(<= {limit}x: {'PASS' if own / git_ <= limit else 'MISS'})"
        )
        print(
            f"  {files:>7} files: {ours * 1e3:.2f} ms (<= 5 ms: "
            f"{'PASS' if ours * 1e3 <= 5 else 'MISS'}); {ours / git_:.3f}x git "
            f"{git_ * 1e3:.1f} ms (<= {limit}x: {'PASS' if ours / git_ <= limit else 'MISS'}); "
            f"walking {quantile(times['walked'], 0.5) * 1e3:.1f} ms; "
            f"drain floor {quantile(times['drain'], 0.5) * 1e3:.3f} ms"
        )
    if len(results) > 1:
        small, large = results[0][1], results[-1][1]
        for key, what in (("watched", "file blobs"), ("memory", "blobs in memory")):
            flat = quantile(large[key], 0.5) / quantile(small[key], 0.5)
            print(
                f"  {results[-1][0]}/{results[0][0]} ratio, {what}: {flat:.2f}x (<= 1.5x: "
                f"{'PASS' if flat <= 1.5 else 'MISS'})"
            )


def sizes(text: str) -> list[tuple[int, int]]:
    """ "10000:200,100000:400" -> [(10000, 200), (100000, 400)]: files and megabytes."""
    out = []
    for part in text.split(","):
        files, _, mb = part.partition(":")
        out.append((int(files), int(mb or max(1, int(files) // 50))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="steady repeats (default 15)")
    parser.add_argument("--first-repeats", type=int, default=1, help="first indexes (default 1)")
    parser.add_argument(
        "--sizes",
        type=sizes,
        default=sizes("10000:200,100000:400"),
        help="files:megabytes of each workspace (default 10000:200,100000:400)",
    )
    parser.add_argument("--quick", action="store_true", help="10000:200 only, 7 repeats")
    parser.add_argument("--dir", help="where the files go (one filesystem for the run)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeats = sizes("10000:200"), 7
    if any(f < 10 for f, _ in args.sizes) or args.repeats < 1 or args.first_repeats < 1:
        parser.error("files >= 10, --repeats >= 1 and --first-repeats >= 1")
    base, work = work_dir(args.dir, "p9-run-")
    fs = filesystem_of(base)
    shown = ", ".join(f"{f} files / {mb} MB" for f, mb in args.sizes)
    print(f"P9  capture around a command changing 10 files: {shown}")
    print(machine())
    print(f"  files under {work} ({fs}); OS page cache warm")
    print(f"  agent_host at {git_state()}; {subprocess.getoutput('git --version')}")
    print(f"  load average {load_average()}{io_pressure()}")
    print(
        f"  {args.repeats} steady repeats after {WARMUP} warm-up, rotated; "
        f"{args.first_repeats} first indexes, alternated"
    )
    run_in(work, lambda: run(args, work))


if __name__ == "__main__":
    main()
