#!/usr/bin/env python
"""P9, whole turn: a scripted turn running one command that changes 10 files, on a
100,000-file workspace, with capture on against the same turn with capture off.

    python bench/bench_turn_p9.py                          # 100k files / 400 MB, 15 rounds
    python bench/bench_turn_p9.py --quick                  # 10k files / 200 MB, 7 rounds
    python bench/bench_turn_p9.py --files 100000:400 --sandbox full,workspace-write
    python bench/bench_turn_p9.py --gap 3.2 --workspace /tmp/ws100k   # a tree kept from before

The workspace is bench_capture_p9's (source-like files in nested folders, a root
.gitignore), written, synced and left 3.5 s so no file is in the index's racy window.
Two AgentHosts on it, each with its own file store (a folder on the same disk: the
log and the blob store as a user's are) and a ``scripted:`` model whose script is,
for every turn, a step calling ``run_command`` (``printf x >>`` 10 files picked at
random, different each turn) and a step answering "done":

- capture on: ``AgentHost(...)`` as built by default (``capture_commands=True``: the
  watching WorkspaceIndex over the store's FileBlobStore);
- capture off: the same with ``capture_commands=False``, the host's own switch: the
  command runs straight through the workspace, nothing is indexed or logged of it.

Both run under the same sandbox policy (``full`` by default: no bubblewrap start in
either, so the difference is capture's; ``--sandbox`` adds others, each a pair of
hosts). A round is one turn of each host, ``await host.send(...)`` timed whole, in an
order rotated each round; medians over the rounds after a warm-up. Before the
capture-on turn an untimed ``refresh()`` of its index takes in what the other host's
command changed (else it would be counted as the user's edits, read and stored),
and an untimed ``save()`` stores the copy of it, so that the timed turn's begin pays
what a session's does when nothing touched the workspace since its last command.
The capture-on host's first index (every file read and stored) is built before the
rounds and reported on its own line.

Racy files: a file read within its timestamp's tick of a change (100 ms for ns
stamps, 3 s for whole seconds) could change again keeping its stat. A walking index
reads such files again at every pass until they are older; a watching one only when
an event names them (any later write is one), and keeps them racy until a pass reads
them (their entries are smudged), so a walk after lost events still does. Turns back
to back (``--gap 0``, the default) leave many files racy; ``--gap 3.2`` waits
(untimed) between rounds as a model's seconds would. The median count of the
capture-on index's racy entries at its turn's start is printed.

Where the capture-on turn's extra time goes: ``capture_log.begin`` (refresh, save
of the index copy the write-ahead CaptureStarted names, its append) and
``capture_log.end`` (changes: the snapshots, logged in the result's append); and,
for both hosts, the sum of the log's appends in a turn and the command itself --
timed by wrapping them for the run (behaviour unchanged).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from bench_capture_p9 import generate, racy_entries, rel
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

WARMUP = 2
TARGET = 1.5  # issue 27: a whole turn with capture <= 1.5x the turn without


def script(path: Path, turns: int, files: int, seed: str) -> None:
    """Per turn, a command changing 10 files (its own, picked at random), then "done"."""
    rng = random.Random(seed)
    steps: list[dict[str, Any]] = []
    for _ in range(turns):
        chosen = " ".join(rel(i) for i in rng.sample(range(files), 10))
        command = f"for f in {chosen}; do printf x >> $f; done"
        steps.append(
            {
                "text": "Appending to ten modules.",
                "tool_calls": [{"name": "run_command", "arguments": {"command": command}}],
                "usage": {"input_tokens": 1000, "output_tokens": 20},
            }
        )
        steps.append({"text": "done", "usage": {"input_tokens": 1100, "output_tokens": 1}})
    path.write_text(json.dumps({"steps": steps}))


class Phases:
    """Where a turn's time goes: capture_log.begin / end, the index's passes, the log's
    appends and the command itself, summed over each timed turn, per host."""

    def __init__(self) -> None:
        from agent_host.session import capture_log
        from agent_host.session.capture import WorkspaceIndex
        from agent_host.session.state import SessionState
        from agent_host.session.workspace.disk import DiskWorkspace

        self.times: dict[str, dict[str, list[float]]] = {}
        self.turn: dict[str, float] | None = None
        """The sums of the turn being timed (None: none is)."""
        self._undo: list[tuple[Any, str, Any]] = []
        for owner, name in (
            (capture_log, "begin"),
            (capture_log, "end"),
            (WorkspaceIndex, "refresh"),
            (WorkspaceIndex, "save"),
            (WorkspaceIndex, "changes"),
            (SessionState, "append"),
            (DiskWorkspace, "run_command"),
        ):
            self._wrap(owner, name)

    def begin(self) -> None:
        self.turn = {}

    def end(self, host: str) -> None:
        turn, self.turn = self.turn or {}, None
        for name, took in turn.items():
            self.times.setdefault(host, {}).setdefault(name, []).append(took)

    def _wrap(self, owner: Any, name: str) -> None:
        real = getattr(owner, name)
        phases = self

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await real(*args, **kwargs)
            finally:
                if phases.turn is not None:
                    phases.turn[name] = phases.turn.get(name, 0.0) + time.perf_counter() - t0

        self._undo.append((owner, name, real))
        setattr(owner, name, timed)

    def restore(self) -> None:
        for owner, name, real in self._undo:
            setattr(owner, name, real)


async def run(args: argparse.Namespace, work: Path) -> None:
    from agent_host import AgentHost

    files, megabytes = args.files
    if args.workspace:
        ws = Path(args.workspace).absolute()
        print(f"\n== {files} files of {ws}, as bench_capture_p9 lays them out")
    else:
        ws = work / "ws"
        ws.mkdir()
        t0 = time.perf_counter()
        total = generate(ws, files, megabytes * 1_000_000)
        os.sync()
        print(
            f"\n== {files} files, {total / 1e6:.0f} MB, written in "
            f"{time.perf_counter() - t0:.1f} s; waiting out the racy window"
        )
        time.sleep(3.5)

    turns = WARMUP + args.rounds
    hosts: dict[str, AgentHost] = {}
    for policy in args.sandbox:
        for capture in (True, False):
            name = f"{'on' if capture else 'off'}/{policy}"
            path = work / f"script-{len(hosts)}.json"
            script(path, turns, files, f"p9-turn-{name}")
            hosts[name] = AgentHost(
                store=work / f"store-{len(hosts)}",
                model=f"scripted:{path}",
                workdir=ws,
                auto_compact=None,
                capture_commands=capture,
                sandbox=policy,
            )
    # The first index of each capture-on host, before any turn: every file stored.
    first: dict[str, float] = {}
    for name, host in hosts.items():
        index = host._resources.index()
        if index is not None:
            os.sync()
            t0 = time.perf_counter()
            await index.refresh()
            first[name] = time.perf_counter() - t0
            assert index.watching, "no inotify: the capture-on turns would walk"

    phases = Phases()
    times: dict[str, list[float]] = {name: [] for name in hosts}
    names = list(hosts)
    racy: list[int] = []
    try:
        for it in range(turns):
            k = it % len(names)
            if args.gap:
                await asyncio.sleep(args.gap)
            for name in names[k:] + names[:k]:
                host = hosts[name]
                index = host._resources.index()
                if index is not None:
                    await index.refresh()  # untimed: the other hosts' commands
                    await index.save()  # and their copy: not this session's to pay
                    if it >= WARMUP:
                        racy.append(racy_entries(index))
                gc.collect()
                phases.begin()
                t0 = time.perf_counter()
                result = await host.send(f"turn {it}")
                took = time.perf_counter() - t0
                if it >= WARMUP:
                    phases.end(name)
                phases.turn = None
                if result.stop_reason != "end_turn" or not result.text.endswith("done"):
                    raise RuntimeError(f"{name}: turn {it} ended {result.stop_reason!r}")
                if it >= WARMUP:
                    times[name].append(took)
        # Each capture-on host logged 10 snapshots a turn; each capture-off host none.
        for name, host in hosts.items():
            checkpoints = await host.list_checkpoints()
            got = [len(c.files) for c in checkpoints]
            want = 10 if name.startswith("on/") else 0
            if len(got) != turns or any(n != want for n in got):
                raise RuntimeError(f"{name}: files per checkpoint {got}, wanted {want} each")
    finally:
        phases.restore()
        for host in hosts.values():
            await host.close()

    head = (
        f"{'benchmark':<60} {'median ms':>10} {'p90 ms':>9} {'n':>4}  "
        f"{'ratio':<22} {'target':<22} result"
    )
    print(head)
    print("-" * len(head))
    for policy in args.sandbox:
        on, off = times[f"on/{policy}"], times[f"off/{policy}"]
        row(f"peer: a turn with capture off ({policy})", off)
        row(
            f"a turn with capture on ({policy})  [P9 turn]",
            on,
            off,
            "capture off",
            TARGET,
        )
        print(f"{'  extra per turn':<60} {fmt_ms(quantile(on, 0.5) - quantile(off, 0.5)):>10}")
        for name, what in (
            ("begin", "  capture_log.begin (refresh, save, append)"),
            ("refresh", "    refresh()"),
            ("save", "    save() (the index copy CaptureStarted names)"),
            ("end", "  capture_log.end (changes; logged with the result)"),
            ("changes", "    changes()"),
        ):
            row(what, phases.times[f"on/{policy}"][name])
        for host in (f"on/{policy}", f"off/{policy}"):
            took = phases.times[host]
            row(f"  {host}: the log's appends, all of a turn", took["append"])
            row(f"  {host}: the command (run_command)", took["run_command"])
    print(
        f"racy entries at a capture-on turn's start (median; read again only if an event"
        f" names them): {quantile(racy, 0.5)}"
    )
    for name, took in first.items():
        print(f"first index of the capture-on host ({name}), not in the rounds: {took:.1f} s")


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
    result = "" if limit is None or ratio is None else "met" if ratio <= limit else "missed"
    print(
        f"{name:<60} {fmt_ms(med):>10} {fmt_ms(quantile(times, 0.9)):>9} {len(times):>4}  "
        f"{ratio_s:<22} {target:<22} {result}"
    )


def size(text: str) -> tuple[int, int]:
    """ "100000:400" -> (100000, 400): files and megabytes."""
    files, _, mb = text.partition(":")
    return int(files), int(mb or max(1, int(files) // 50))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=size, default=None, help="files:MB (100000:400)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (15)")
    parser.add_argument(
        "--sandbox",
        type=lambda s: s.split(","),
        default=["full"],
        help="sandbox policies, each a pair of hosts (default full)",
    )
    parser.add_argument("--quick", action="store_true", help="10000:200 and 7 rounds")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between rounds (0)")
    parser.add_argument("--workspace", help="an existing tree of --files files (kept)")
    parser.add_argument("--dir", help="where the files go (one filesystem for the run)")
    args = parser.parse_args()
    args.files = args.files or ((10_000, 200) if args.quick else (100_000, 400))
    args.rounds = args.rounds or (7 if args.quick else 15)
    if args.files[0] < 10 or args.rounds < 1:
        parser.error("files >= 10 and --rounds >= 1")
    base, work = work_dir(args.dir, "p9-turn-")
    print(f"P9  a whole scripted turn, one command changing 10 files: {args.files[0]} files")
    print(machine())
    print(f"  files under {work} ({filesystem_of(base)}); OS page cache warm")
    print(f"  agent_host at {git_state()}; sandbox {', '.join(args.sandbox)}")
    print(f"  load average {load_average()}{io_pressure()}")
    print(
        f"  {args.rounds} rounds after {WARMUP} warm-up, one turn of each host a round, "
        f"rotated; {args.gap:g} s between rounds"
    )
    run_in(work, lambda: run(args, work))


if __name__ == "__main__":
    main()
