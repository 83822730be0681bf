#!/usr/bin/env python
"""P4: restore a session whose last turn changed 200 files of 4 KB, against the floor.

    python bench/bench_restore_p4.py                       # this tree, 9 repeats
    python bench/bench_restore_p4.py --store sqlite        # the sqlite store instead
    python bench/bench_restore_p4.py --compare-with /tmp/agent-host-1f98930

Each repeat builds a fresh store and workspace: 200 files of 4 KB already on disk,
then one turn (not timed) in which the scripted model rewrites every one of them
through the agent's own write_file tool, so the checkpoint knows them. Timed: only
``await host.restore(sid, checkpoint)`` (the 200 files back to what they were before
the turn, and the conversation), then ``await host.undo_restore(sid)`` (forward again).

The floor, in the same run and folder tree (so the same filesystem): replacing 200
existing 4 KB files atomically, each by temp file + write + fsync + rename, called
directly (no thread hop), twice: with one directory fsync at the end (what makes the
200 renames durable at least cost), and with a directory fsync after every file (what
a writer that makes each file durable on its own pays).

``--compare-with TREE`` runs the same repeats against another checkout of agent_host
(e.g. the main before a rewrite) in a worker process with ``PYTHONPATH=TREE``, one of
its repeats interleaved with each of ours so drift on a busy machine hits both alike;
the worker answers in JSON lines. Only the public API is used (AgentHost with a
``scripted:`` model, its restore and undo_restore), so the script runs unchanged
against older trees.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench_common import default_base, filesystem_of, fmt_ms, io_pressure, load_average, quantile

WARMUP = 1

# --------------------------------------------------------------------------- data

_WORDS = (
    "def return self value None import from class if else for in while try except "
    "raise with as async await lambda yield assert pass path data items result config"
).split()


def file_text(i: int, version: str, size: int) -> str:
    """``size`` bytes of source-looking ASCII, different for every file and version."""
    rng = random.Random(f"{version}-{i}")
    lines, n = [f"# file {i}, version {version}"], 0
    while n < size:
        indent = "    " * rng.randrange(3)
        line = indent + " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 9)))
        lines.append(line)
        n += len(line) + 1
    return ("\n".join(lines)[: size - 1]) + "\n"


def rel(i: int) -> str:
    return f"src/module_{i:03d}.py"


# --------------------------------------------------------------------------- floor


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def floor_once(work: Path, datas: list[bytes], dir_fsync_each: bool) -> tuple[float, float]:
    """Seconds (wall, CPU) to replace len(datas) existing files by temp + write + fsync
    + rename, with a directory fsync after each file or once at the end."""
    folder = work / ("floor-each" if dir_fsync_each else "floor-once") / "src"
    folder.mkdir(parents=True)
    paths = [folder / f"module_{i:03d}.py" for i in range(len(datas))]
    old = b"o" * len(datas[0])
    for p in paths:  # the files being replaced, as the workspace has them
        p.write_bytes(old)
    _fsync_dir(folder)
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for path, data in zip(paths, datas, strict=True):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if dir_fsync_each:
            _fsync_dir(folder)
    if not dir_fsync_each:
        _fsync_dir(folder)
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    if paths[-1].read_bytes() != datas[-1]:
        raise RuntimeError("floor: the last file does not hold what was written")
    return took, cpu


# --------------------------------------------------------------------------- ours


def _disk(ws: Path, n: int) -> list[bytes]:
    return [(ws / rel(i)).read_bytes() for i in range(n)]


async def restore_once(work: Path, store: str, n: int, size: int) -> dict[str, float]:
    """One repeat in a fresh store and workspace under ``work``: the turn (untimed),
    then the timed restore and undo. Checks the files after each."""
    from agent_host import AgentHost

    ws = work / "ws"
    (ws / "src").mkdir(parents=True)
    before = [file_text(i, "before", size).encode() for i in range(n)]
    after = [file_text(i, "after", size) for i in range(n)]
    for i, data in enumerate(before):
        (ws / rel(i)).write_bytes(data)
    script = work / "script.json"
    calls = [
        {"name": "write_file", "arguments": {"path": rel(i), "content": after[i]}} for i in range(n)
    ]
    script.write_text(
        json.dumps(
            {
                "steps": [
                    {
                        "text": f"Rewriting all {n} modules.",
                        "tool_calls": calls,
                        "usage": {"input_tokens": 1000, "output_tokens": 100},
                    },
                    {"text": "Done.", "usage": {"input_tokens": 2000, "output_tokens": 5}},
                ]
            }
        )
    )
    url = (work / "store").as_uri() if store == "file" else f"sqlite://{work / 'store.db'}"
    host = AgentHost(store=url, model=f"scripted:{script}", workdir=ws, auto_compact=None)
    try:
        t0 = time.perf_counter()
        result = await host.send(f"Rewrite the {n} modules.")
        turn_s = time.perf_counter() - t0
        after_b = [a.encode() for a in after]
        if result.stop_reason != "end_turn" or _disk(ws, n) != after_b:
            raise RuntimeError(f"the turn did not rewrite the files: {result}")
        sid = host.session_id

        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        restored = await host.restore(sid, result.checkpoint)
        restore_s, restore_cpu = time.perf_counter() - t0, time.process_time() - c0
        if len(restored.restored_files) != n or _disk(ws, n) != before:
            raise RuntimeError(f"restore gave {len(restored.restored_files)} files, or wrong bytes")

        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        undone = await host.undo_restore(sid)
        undo_s, undo_cpu = time.perf_counter() - t0, time.process_time() - c0
        if len(undone.restored_files) != n or _disk(ws, n) != after_b:
            raise RuntimeError(f"undo gave {len(undone.restored_files)} files, or wrong bytes")
    finally:
        await host.close()
    return {
        "turn": turn_s,
        "restore": restore_s,
        "undo": undo_s,
        "restore_cpu": restore_cpu,
        "undo_cpu": undo_cpu,
    }


def tree_of_agent_host() -> tuple[str, str]:
    """Where agent_host was imported from, and that checkout's commit."""
    import agent_host

    where = Path(agent_host.__file__).resolve().parent.parent

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(where), *a], capture_output=True, text=True, check=False
        ).stdout.strip()

    rev = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "agent_host")
    return agent_host.__file__, rev + (" + uncommitted changes to agent_host" if dirty else "")


# --------------------------------------------------------------------------- worker


def worker(args: argparse.Namespace) -> None:
    """One repeat per line read on stdin; one JSON line out per repeat."""
    base = Path(args.dir)
    file, rev = tree_of_agent_host()
    print(json.dumps({"agent_host": file, "rev": rev}), flush=True)
    for i, _line in enumerate(sys.stdin):
        work = Path(tempfile.mkdtemp(prefix=f"old-{i}-", dir=base))
        try:
            out = asyncio.run(restore_once(work, args.store, args.files, args.size))
        except Exception:
            out = {"error": traceback.format_exc()}
        print(json.dumps(out), flush=True)


class Worker:
    def __init__(self, tree: Path, args: argparse.Namespace, run: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(tree))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker"]
        cmd += ["--store", args.store, "--files", str(args.files), "--size", str(args.size)]
        cmd += ["--dir", str(run)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=run
        )
        hello = self._line()
        self.file, self.rev = hello["agent_host"], hello["rev"]
        if not Path(self.file).resolve().is_relative_to(tree.resolve()):
            self.close()
            sys.exit(f"--compare-with {tree}: the worker imported agent_host from {self.file}")

    def _line(self) -> dict:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            sys.exit(f"the --compare-with worker exited ({self.proc.wait()})")
        return json.loads(line)

    def repeat(self) -> dict[str, float]:
        self.proc.stdin.write("run\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        out = self._line()
        if "error" in out:
            self.close()
            sys.exit(f"the --compare-with worker failed:\n{out['error']}")
        return out

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


# --------------------------------------------------------------------------- table


def row(
    name: str,
    times: list[float],
    ref: list[float] | None = None,
    ref_label: str = "",
    limit: float | None = None,
    extra: bool = False,
) -> None:
    med = quantile(times, 0.5)
    ratio = med / quantile(ref, 0.5) if ref else None
    ratio_s = f"{ratio:.2f}x {ref_label}" if ratio is not None else ""
    target = f"<= {limit:g}x {ref_label}" if limit is not None else ""
    result = ""
    if limit is not None and ratio is not None:
        result = "PASS" if ratio <= limit else "MISS"
        if extra:
            result = result.lower() + " (extra)"
    print(
        f"{name:<50} {fmt_ms(med):>10} {fmt_ms(quantile(times, 0.9)):>9} {len(times):>4}  "
        f"{ratio_s:<20} {target:<22} {result}"
    )


def paired(new: list[float], old: list[float]) -> None:
    """The ratio within each round (the two ran back to back), beside the ratio of medians."""
    ratios = [a / b for a, b in zip(new, old, strict=True)]
    print(
        f"{'':<4}per round: median {quantile(ratios, 0.5):.2f}x, "
        f"range {min(ratios):.2f}-{max(ratios):.2f}x"
    )


# --------------------------------------------------------------------------- main


def main_run(args: argparse.Namespace) -> None:
    base = Path(args.dir).expanduser().absolute() if args.dir else default_base()
    base.mkdir(parents=True, exist_ok=True)
    run = Path(tempfile.mkdtemp(prefix="p4-run-", dir=base))
    file, rev = tree_of_agent_host()
    n, size = args.files, args.size
    fs = filesystem_of(base)
    print(f"P4  restore a turn that changed {n} files of {size} bytes ({args.store} store)")
    print(f"  python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"  files under {run} ({fs}); OS page cache warm")
    if fs.split()[1:2] in (["tmpfs"], ["ramfs"]):
        print("  WARNING: a RAM filesystem: fsync costs nothing here, so P4 measures no disk")
    print(f"  this tree: agent_host at {rev} ({file})")
    old: Worker | None = None
    if args.compare_with:
        old = Worker(Path(args.compare_with), args, run)
        print(f"  old tree:  agent_host at {old.rev} ({old.file}), in a worker process")
    print(f"  load average {load_average()}{io_pressure()}")
    print(f"  {args.repeats} repeats after {WARMUP} warm-up, round-robin (first contender rotated)")

    datas = [file_text(i, "before", size).encode() for i in range(n)]
    times: dict[str, list[float]] = {
        k: []
        for k in ("once", "each", "once_cpu", "each_cpu", "turn")
        + ("restore", "undo", "restore_cpu", "undo_cpu")
        for k in (k, f"old_{k}")
    }
    started = time.perf_counter()

    def floor(it: int, kind: str) -> dict[str, float]:
        wall, cpu = floor_once(run / f"f-{it}", datas, kind == "each")
        return {kind: wall, f"{kind}_cpu": cpu}

    def ours(it: int) -> dict[str, float]:
        return asyncio.run(restore_once(run / f"new-{it}", args.store, n, size))

    contenders = [
        ("floor once", lambda it: floor(it, "once")),
        ("floor each", lambda it: floor(it, "each")),
        ("ours", lambda it: ours(it)),
    ]
    if old is not None:
        contenders.append(("old", lambda it: {f"old_{k}": v for k, v in old.repeat().items()}))
    try:
        for it in range(WARMUP + args.repeats):
            k = it % len(contenders)
            for _name, fn in contenders[k:] + contenders[:k]:
                got = fn(it)
                if it >= WARMUP:
                    for key, value in got.items():
                        times[key].append(value)
    finally:
        if old is not None:
            old.close()
        shutil.rmtree(run, ignore_errors=True)

    head = (
        f"{'benchmark':<50} {'median ms':>10} {'p90 ms':>9} {'n':>4}  "
        f"{'ratio':<20} {'target':<22} result"
    )
    print()
    print(head)
    print("-" * len(head))
    once, each = times["once"], times["each"]
    row(f"floor: {n} x (tmp+write+fsync+rename), 1 dir fsync", once)
    row(f"floor: {n} x (tmp+write+fsync+rename+dir fsync)", each, once, "floor")
    row("host.restore (this tree)", times["restore"], once, "floor", 3.0)
    row("  same, vs the per-file dir fsync floor", times["restore"], each, "floor-each", 3.0, True)
    row("host.undo_restore (this tree)", times["undo"], once, "floor")
    if old is not None:
        row("host.restore (old tree)", times["old_restore"], once, "floor")
        row("host.undo_restore (old tree)", times["old_undo"], once, "floor")
        row("restore: this tree vs old", times["restore"], times["old_restore"], "old", 1.2)
        paired(times["restore"], times["old_restore"])
        row("undo_restore: this tree vs old", times["undo"], times["old_undo"], "old")
        paired(times["undo"], times["old_undo"])
    med = {k: quantile(v, 0.5) * 1e3 for k, v in times.items() if v}
    cpu = (
        "\nCPU time, median ms (process_time: user + system, all threads, the kernel's "
        "share of the syncs included):\n"
        f"  restore {med['restore_cpu']:.1f}, "
        f"undo {med['undo_cpu']:.1f}; floor {med['once_cpu']:.1f} (1 dir fsync), "
        f"{med['each_cpu']:.1f} (per file)"
    )
    if old is not None:
        cpu += (
            f"; old tree: restore {med['old_restore_cpu']:.1f}, undo {med['old_undo_cpu']:.1f} "
            f"(this tree {med['restore_cpu'] / med['old_restore_cpu']:.2f}x, "
            f"{med['undo_cpu'] / med['old_undo_cpu']:.2f}x old)"
        )
    print(cpu)
    per_file = med["restore"] / n
    print(
        f"\nrestore: {per_file:.3f} ms a file; the turn that made the changes (untimed) took "
        f"{fmt_ms(quantile(times['turn'], 0.5))} ms median; "
        f"{time.perf_counter() - started:.0f}s in all; "
        f"load average now {load_average()}{io_pressure()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats (default 9)")
    parser.add_argument("--store", choices=("file", "sqlite"), default="file")
    parser.add_argument("--files", type=int, default=200, help="files the turn changes")
    parser.add_argument("--size", type=int, default=4096, help="bytes in each file")
    parser.add_argument("--dir", help="where the files go (one filesystem for the run)")
    parser.add_argument(
        "--compare-with", metavar="TREE", help="another agent_host checkout to run against"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.files < 1 or args.size < 64 or args.repeats < 1:
        parser.error("--files >= 1, --size >= 64 and --repeats >= 1")
    if args.worker:
        worker(args)
    else:
        main_run(args)


if __name__ == "__main__":
    main()
