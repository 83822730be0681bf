"""What bench_store.py and bench_server.py share: where the files go, the state of the
machine and the repo for the header, and the quantile their tables print."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def quantile(values: list[float], frac: float) -> float:
    """The sample at ``frac`` of the way through ``values`` sorted (nearest rank, no
    interpolation)."""
    s = sorted(values)
    return s[min(len(s) - 1, round(frac * (len(s) - 1)))]


def default_base() -> Path:
    """The temp dir if it is on the repo's filesystem, else the repo's parent."""
    tmp = Path(tempfile.gettempdir())
    if os.stat(tmp).st_dev == os.stat(REPO).st_dev:
        return tmp / f"agent-host-bench-{os.getuid()}"
    return REPO.parent / ".agent-host-bench"


def load_average() -> str:
    """Load average, and the share of the last 10 s some task waited for a CPU (PSI):
    other work on the machine shows here and makes a run noisy."""
    try:
        text = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"
    try:
        with open("/proc/pressure/cpu") as f:
            some = f.readline().split()[1].split("=")[1]
        text += f", cpu pressure {some}%"
    except (OSError, IndexError):
        pass
    return text


def git_state() -> str:
    """The repo's HEAD, and whether agent_host has uncommitted changes."""

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *a], capture_output=True, text=True, check=False
        ).stdout.strip()

    rev = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "agent_host")
    return rev + (" + uncommitted changes to agent_host" if dirty else "")


def filesystem_of(path: Path) -> str:
    """'<device> <fstype> on <mount point>' for the filesystem holding ``path``."""
    best = ("?", "?", "")
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                dev, mnt, fstype = line.split()[:3]
                mnt = mnt.replace("\\040", " ")
                if (str(path) + "/").startswith(mnt.rstrip("/") + "/") and len(mnt) >= len(best[2]):
                    best = (dev, fstype, mnt)
    except OSError:
        pass
    return f"{best[0]} {best[1]} on {best[2] or '?'}"


def io_pressure() -> str:
    """The share of the last 10 s some task waited for I/O (PSI): other tenants' syncs
    slow the floor and the restore alike, and show here."""
    try:
        with open("/proc/pressure/io") as f:
            return f", io pressure {f.readline().split()[1].split('=')[1]}%"
    except (OSError, IndexError):
        return ""


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.2f}" if ms < 100 else f"{ms:.1f}"


def work_dir(where: str | None, prefix: str) -> tuple[Path, Path]:
    """The base folder (``--dir``, else default_base) and a new run folder in it."""
    base = Path(where).expanduser().absolute() if where else default_base()
    base.mkdir(parents=True, exist_ok=True)
    return base, Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def machine() -> str:
    """The header line naming Python, the platform and the CPUs."""
    import platform

    return f"  python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs"


def run_in(work: Path, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``main`` to its end, remove ``work`` whatever happens, and print the time
    it took with the load after it."""
    import asyncio
    import shutil
    import time

    started = time.perf_counter()
    try:
        asyncio.run(main())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n{time.perf_counter() - started:.0f}s in all; load average now "
        f"{load_average()}{io_pressure()}"
    )
