#!/usr/bin/env python
"""P9: what capturing a command's changes costs on a workspace of 10,000 files (200 MB).

    python bench/bench_capture_p9.py                 # 15 steady repeats, 3 first indexes
    python bench/bench_capture_p9.py --files 2000 --megabytes 40 --repeats 5   # quick

One workspace per run: 10,000 source-like files in 1,000 nested folders, 200 MB in
all (sizes drawn log-normal), with a root .gitignore as a repository has; written,
synced, and left 3.5 s so no file is within the index's racy window.

First index: a fresh WorkspaceIndex over a fresh FileBlobStore, timed through its
first ``refresh()`` (the first index, which reads and stores every file, and one
pass after it), against the peer's first checkpoint, ``git add -A`` (and then
``git commit -q``) into a fresh git dir whose work tree is the workspace
(``git --git-dir=X --work-tree=WS``), as a Cline-style shadow repository does
(its gc.auto off, so no background gc runs during the timings).
Every contender starts after an os.sync(), so none pays for another's writes.

Steady state, the P9 figure: a round is ``refresh()``, ``run_command("true")``
through DiskWorkspace (the real shell path), ``changes()``; the overhead is
refresh + changes. Beside it in the same run and tree, rotated each round: the
floor, a bare stat walk (os.scandir recursion and an lstat of every entry, on this
thread), and the peer's checkpoint of an unchanged tree,
``git add -A && git commit -q --allow-empty``.

Storage: after the first index, 5 turns each change 10 files by commands (sed -i);
each turn is captured by both (refresh, command, changes; then the peer's add and
commit). Reported: how many bytes the blob store and the shadow git dir grew
(``du -sb``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import random
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from bench_common import (
    default_base,
    filesystem_of,
    fmt_ms,
    git_state,
    io_pressure,
    load_average,
    quantile,
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
    """20 packages x 10 modules x 5 subfolders: 1,000 folders, three deep."""
    return f"pkg{i % 20:02d}/mod{(i // 20) % 10}/sub{(i // 200) % 5}/file_{i:05d}.py"


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
        f"{name:<52} {fmt_ms(med):>10} {fmt_ms(quantile(times, 0.9)):>9} {len(times):>4}  "
        f"{ratio_s:<22} {target:<22} {result}"
    )


# --------------------------------------------------------------------------- main


async def run(args: argparse.Namespace, work: Path) -> None:
    from agent_host.session.workspace import DiskWorkspace

    ws = work / "ws"
    ws.mkdir()
    t0 = time.perf_counter()
    total = generate(ws, args.files, args.megabytes * 1_000_000)
    os.sync()
    print(
        f"  workspace: {args.files} files, {total / 1e6:.0f} MB, written in "
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
                blob_dir = work / f"blobs-{it}"
                took, index = await first_ours(ws, blob_dir)
                first["ours"].append(took)
            else:
                if git_dir is not None:
                    shutil.rmtree(git_dir)
                git_dir = work / f"shadow-{it}.git"
                add, both = first_git(ws, git_dir)
                first["add"].append(add)
                first["commit"].append(both)
    assert index is not None and git_dir is not None and blob_dir is not None
    first_store = {"ours": du(blob_dir), "git": du(git_dir)}

    # Steady state: rounds rotating the floor, ours and the peer.
    disk = DiskWorkspace([ws])
    times: dict[str, list[float]] = {
        k: [] for k in ("walk", "refresh", "true", "changes", "ours", "round", "git")
    }

    async def ours() -> dict[str, float]:
        t0 = time.perf_counter()
        await index.refresh()
        t1 = time.perf_counter()
        result = await disk.run_command("true")
        t2 = time.perf_counter()
        got = await index.changes()
        t3 = time.perf_counter()
        if result.exit_code != 0 or got.changes or got.not_captured:
            raise RuntimeError(f"`true` changed something: {got}")
        return {
            "refresh": t1 - t0,
            "true": t2 - t1,
            "changes": t3 - t2,
            "ours": (t1 - t0) + (t3 - t2),
            "round": t3 - t0,
        }

    def walk() -> dict[str, float]:
        t0 = time.perf_counter()
        if stat_walk(ws) != entries:
            raise RuntimeError("the tree changed under the stat walk")
        return {"walk": time.perf_counter() - t0}

    def peer() -> dict[str, float]:
        t0 = time.perf_counter()
        git_checkpoint(git_dir, ws)
        return {"git": time.perf_counter() - t0}

    contenders = [("walk", walk), ("ours", ours), ("peer", peer)]
    for it in range(WARMUP + args.repeats):
        k = it % len(contenders)
        for _name, fn in contenders[k:] + contenders[:k]:
            gc.collect()
            got = fn()
            if asyncio.iscoroutine(got):
                got = await got
            if it >= WARMUP:
                for key, value in got.items():
                    times[key].append(value)

    # Storage: 5 turns of 10 files changed by commands, captured by both.
    rng = random.Random("p9-turns")
    blobs_before, git_before = du(blob_dir), du(git_dir)
    turn_changes = []
    for turn in range(5):
        chosen = " ".join(rel(i) for i in rng.sample(range(args.files), 10))
        await index.refresh()
        subprocess.run(
            ["sh", "-c", f"sed -i 's/return/return_{turn}/' {chosen}"], cwd=ws, check=True
        )
        got = await index.changes()
        turn_changes.append(len(got.changes))
        git_checkpoint(git_dir, ws)
    grew = {"ours": du(blob_dir) - blobs_before, "git": du(git_dir) - git_before}
    await index.close()

    head = (
        f"{'benchmark':<52} {'median ms':>10} {'p90 ms':>9} {'n':>4}  "
        f"{'ratio':<22} {'target':<22} result"
    )
    print()
    print(head)
    print("-" * len(head))
    row(f"floor: stat walk of {entries} entries (scandir + lstat)", times["walk"])
    row("peer: git add -A && git commit (unchanged tree)", times["git"], times["walk"], "walk")
    row("ours: refresh() + changes()  [P9 overhead]", times["ours"], times["walk"], "walk", 3.0)
    row("  same, vs the peer", times["ours"], times["git"], "git", 0.2)
    ours_med = quantile(times["ours"], 0.5) * 1e3
    print(
        f"{'  same, absolute':<52} {ours_med:>10.2f} {'':>9} {'':>4}  {'':<22} "
        f"{'<= 50 ms':<22} {'PASS' if ours_med <= 50 else 'MISS'}"
    )
    row("  refresh()", times["refresh"], times["walk"], "walk")
    row("  changes()", times["changes"], times["walk"], "walk")
    row("  run_command('true') between them", times["true"])
    row("  the whole round", times["round"], times["git"], "git")
    row("first index: refresh() of a fresh index", first["ours"], first["add"], "git add", 2.0)
    row("peer first: git add -A", first["add"])
    row("peer first: git add -A && git commit", first["commit"], first["add"], "git add")

    mb = 1e6
    print(
        f"\nstorage after the first index: blob store {first_store['ours'] / mb:.1f} MB, "
        f"shadow git dir {first_store['git'] / mb:.1f} MB "
        f"({first_store['ours'] / first_store['git']:.2f}x)"
    )
    print(
        f"storage grown by 5 turns of 10 files changed (changes captured per turn: "
        f"{turn_changes}): blob store +{grew['ours'] / 1e3:.0f} KB, shadow git dir "
        f"+{grew['git'] / 1e3:.0f} KB ({grew['ours'] / max(grew['git'], 1):.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="steady repeats (default 15)")
    parser.add_argument("--first-repeats", type=int, default=3, help="first indexes (default 3)")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--dir", help="where the files go (one filesystem for the run)")
    args = parser.parse_args()
    if args.files < 10 or args.repeats < 1 or args.first_repeats < 1:
        parser.error("--files >= 10, --repeats >= 1 and --first-repeats >= 1")
    base = Path(args.dir).expanduser().absolute() if args.dir else default_base()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="p9-run-", dir=base))
    fs = filesystem_of(base)
    print(f"P9  capture overhead on {args.files} files, {args.megabytes} MB")
    print(f"  python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"  files under {work} ({fs}); OS page cache warm")
    print(f"  agent_host at {git_state()}; {subprocess.getoutput('git --version')}")
    print(f"  load average {load_average()}{io_pressure()}")
    print(
        f"  {args.repeats} steady repeats after {WARMUP} warm-up, rotated; "
        f"{args.first_repeats} first indexes, alternated"
    )
    started = time.perf_counter()
    try:
        asyncio.run(run(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n{time.perf_counter() - started:.0f}s in all; load average now "
        f"{load_average()}{io_pressure()}"
    )


if __name__ == "__main__":
    main()
