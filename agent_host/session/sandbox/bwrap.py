"""A policy as a bubblewrap command line, and its resource limits as a pre-exec hook.

The view a confined command gets (built in this order, so later mounts win):
the whole filesystem read-only (``--ro-bind / /``), a fresh ``/dev`` and ``/proc``
(its own pid namespace: the agent's processes are not there to read or ptrace,
and everything the command started dies with it, ``setsid`` or not), then the
writable roots and the private temp bound read-write, ``.git`` under them bound
read-only again, and the deny list covered by an empty, unreadable file or folder.
No capabilities (as root too), a session of its own (no TIOCSTI into the agent's
terminal), a network namespace with only its own loopback unless the policy
allows the network.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Sequence
from pathlib import Path

from .policy import Limits, SandboxPolicy


def bwrap_argv(
    bwrap: str,
    policy: SandboxPolicy,
    *,
    writable: Sequence[Path],
    deny: Sequence[Path],
    denied_file: Path,
    denied_folder: Path,
    cwd: Path,
    command: Sequence[str],
) -> list[str]:
    """``command`` under ``bwrap`` confined by ``policy``; ``writable``: the roots
    (workspace-write) and the private temp, already resolved; ``deny``: the places
    to hide (existing, absolute); ``denied_*``: the empty, mode-000 stand-ins."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    if not policy.git_writable:
        for path in writable:
            git = path / ".git"
            if git.exists():
                argv += ["--ro-bind", str(git), str(git)]
    for path in deny:
        # The real path: a symlinked ~/.ssh is hidden where its files are.
        real = Path(os.path.realpath(path))
        stand_in = denied_folder if real.is_dir() else denied_file
        argv += ["--ro-bind", str(stand_in), str(real)]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--chdir", str(cwd), "--", *command]
    return argv


def prlimit_argv(prlimit: str, limits: Limits) -> list[str]:
    """``limits`` as a util-linux ``prlimit`` command line to put before a command
    (inside the sandbox: bubblewrap itself runs without them)."""
    flags = [
        ("--nproc", resource.RLIMIT_NPROC, limits.processes),
        ("--data", resource.RLIMIT_DATA, limits.memory_bytes),
        ("--fsize", resource.RLIMIT_FSIZE, limits.file_size_bytes),
        ("--cpu", resource.RLIMIT_CPU, limits.cpu_seconds),
    ]
    argv = [prlimit]
    for flag, which, value in flags:
        if value is not None:
            argv.append(f"{flag}={_within_hard(which, value)}")
    return [*argv, "--"]


def _within_hard(which: int, value: int) -> int:
    # Never above what this process may have (prlimit would fail, and the command
    # with it): lowering is all a process can do.
    _, hard = resource.getrlimit(which)
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def set_limits(limits: Limits) -> Callable[[], None]:
    """A pre-exec hook (run in the child between fork and exec) that sets
    ``limits``; bubblewrap and all it starts inherit them. Used where ``prlimit``
    is missing: a hook makes Python fork the whole host rather than vfork it."""
    pairs = [
        (resource.RLIMIT_NPROC, limits.processes),
        (resource.RLIMIT_DATA, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
    ]
    wanted = [(which, value) for which, value in pairs if value is not None]

    def apply() -> None:
        for which, value in wanted:
            value = _within_hard(which, value)
            resource.setrlimit(which, (value, value))

    return apply
