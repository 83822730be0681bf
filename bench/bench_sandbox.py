"""The sandbox's cost per command: ``run_command("true")`` through a DiskWorkspace
under ``workspace-write`` (bubblewrap, rlimits, a fresh pid, mount, IPC, UTS and
network namespace) beside the same call unconfined (``full``: ``/bin/sh -c true``),
alternating within rounds; and the bare spawns beneath them (``sh -c true``, and
bubblewrap around it with the same arguments) as the floor. Target: ≤ +15 ms.

    python bench/bench_sandbox.py [--runs N] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_common import git_state, load_average  # noqa: E402

from agent_host.session.sandbox import Sandbox, mechanism  # noqa: E402
from agent_host.session.workspace import DiskWorkspace  # noqa: E402

TARGET_MS = 15.0


async def one_call(ws: DiskWorkspace) -> float:
    started = time.perf_counter()
    result = await ws.run_command("true", timeout=30)
    elapsed = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    return elapsed * 1000


def bare(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="calls of each kind per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    found = mechanism()
    if not found.available:
        sys.exit(f"no sandbox here: {found.reason}")
    print(f"# bench_sandbox  commit {git_state()}  load {load_average()}")
    root = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    confined_box = Sandbox("workspace-write")
    confined = DiskWorkspace([root], sandbox=confined_box)
    free = DiskWorkspace([root], sandbox=Sandbox("full"))
    launch = confined_box.launch(["/bin/sh", "-c", "true"], roots=[root], cwd=root, env={})
    samples: dict[str, list[float]] = {k: [] for k in ("full", "ww", "sh", "bwrap")}
    await one_call(confined)  # the probe and the private temp, once per process
    for _ in range(args.rounds):
        for _ in range(args.runs):
            samples["full"].append(await one_call(free))
            samples["ww"].append(await one_call(confined))
            samples["sh"].append(bare(["/bin/sh", "-c", "true"]))
            samples["bwrap"].append(bare(launch.argv))
    med = {k: statistics.median(v) for k, v in samples.items()}
    added = med["ww"] - med["full"]
    floor_added = med["bwrap"] - med["sh"]
    n = args.runs * args.rounds
    print(f"{n} calls of each, medians:")
    print(f"  run_command('true') unconfined (full)      {med['full']:7.2f} ms")
    print(f"  run_command('true') workspace-write        {med['ww']:7.2f} ms")
    print(
        f"  added by the sandbox                       {added:+7.2f} ms  (target <= +{TARGET_MS:g})"
    )
    print(f"  floor: bare sh -c true                     {med['sh']:7.2f} ms")
    print(
        f"  floor: bare bwrap (same argv) sh -c true   {med['bwrap']:7.2f} ms  ({floor_added:+.2f})"
    )
    print(f"result: {'met' if added <= TARGET_MS else 'missed'}  load at end {load_average()}")
    confined_box.close()


if __name__ == "__main__":
    asyncio.run(main())
