"""Whether commands can be confined here: bubblewrap found and able to make the
namespaces it needs (user namespaces when unprivileged, pid and network ones).

Probed once per process by running the sandbox itself around ``true``; what is
missing is said once, in the log, and then in each refusal.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys

import attrs

log = logging.getLogger(__name__)

BWRAP_ENV = "AGENT_HOST_BWRAP"
"""A path to the ``bwrap`` to use (default: the one on PATH)."""


@attrs.frozen
class Mechanism:
    """What confines commands: bubblewrap at ``path``, or None and ``reason``."""

    path: str | None
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.path is not None


@functools.cache
def mechanism() -> Mechanism:
    """The mechanism of this process (probed on the first call, in ~5 ms)."""
    found = _probe()
    if not found.available:
        log.warning("commands cannot be sandboxed here: %s", found.reason)
    return found


def _probe() -> Mechanism:
    if not sys.platform.startswith("linux"):
        return Mechanism(None, f"no sandbox for {sys.platform} yet (Linux: bubblewrap)")
    path = os.environ.get(BWRAP_ENV) or shutil.which("bwrap")
    if path is None:
        return Mechanism(
            None, "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt install bubblewrap)"
        )
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--unshare-pid", "--unshare-net", "--cap-drop", "ALL", "--", "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Mechanism(None, f"{path} cannot run: {exc}")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        why = said[-1] if said else f"exit status {done.returncode}"
        return Mechanism(
            None,
            f"{path} cannot make a sandbox: {why} (are unprivileged user namespaces "
            "off? kernel.unprivileged_userns_clone, or an AppArmor restriction)",
        )
    return Mechanism(path)
