"""Whether a confined command that failed was stopped by the sandbox, read from
what it printed and how it ended: the reason shown to the model and the user, who
may approve running it again unconfined.

A guess from the command's words (a program may print "Read-only file system"
for its own reasons), so it only ever offers the way out, never takes it.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path

from .policy import SandboxPolicy

_WRITE = ("Read-only file system", "EROFS")
_LINK = ("Invalid cross-device link", "EXDEV")
_NETWORK = (
    "Network is unreachable",
    "ENETUNREACH",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "No address associated with hostname",
    "getaddrinfo failed",
    "Connection refused",
    "ECONNREFUSED",
)
_PROCESSES = ("fork: Resource temporarily unavailable", "Cannot fork", "fork: retry")
_FILE_SIZE = ("File too large", "EFBIG")


def sandbox_denial(
    output: str, exit_code: int | None, policy: SandboxPolicy, hidden: Sequence[Path]
) -> str | None:
    """Why the sandbox stopped the command (None: nothing says it did)."""
    if exit_code == 0 or exit_code is None:
        return None
    if _said(output, _WRITE):
        where = "the session's folders and $TMPDIR"
        if policy.mode == "read-only":
            where = "$TMPDIR only (policy read-only)"
        if not policy.git_writable and ".git" in output:
            where += "; .git is read-only"
        return f"it wrote where the sandbox lets no command write (it may write {where})"
    if _said(output, _LINK):
        return "it linked a file across the sandbox's boundary"
    if "Permission denied" in output and any(str(p) in output for p in hidden):
        return "it read a place the sandbox hides (keys, credentials, the agent's store)"
    if not policy.network and _said(output, _NETWORK):
        return "it used the network, which the sandbox has off"
    if _said(output, _FILE_SIZE) or exit_code in _signalled(signal.SIGXFSZ):
        return f"it wrote a file past the sandbox's limit of {policy.limits.file_size_bytes} bytes"
    if exit_code in _signalled(signal.SIGXCPU):
        return f"it ran past the sandbox's CPU limit of {policy.limits.cpu_seconds} s"
    if _said(output, _PROCESSES):
        return f"it started more than the sandbox's {policy.limits.processes} processes"
    return None


def _said(output: str, words: Sequence[str]) -> bool:
    return any(w in output for w in words)


def _signalled(sig: signal.Signals) -> tuple[int, int]:
    # As run_shell reports it (-N) and as a shell reports its child's (128 + N).
    return (-sig, 128 + sig)
