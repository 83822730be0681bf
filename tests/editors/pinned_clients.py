"""Where the pinned, unmodified ACP editor clients are: the ``shared/clients`` folder
beside the repository (``../shared/clients``), which a clone elsewhere (CI's clean
clone) finds beside the repository it was cloned from; ``$AGENT_HOST_CLIENTS``
overrides both."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def clients_dir() -> Path:
    """The folder that holds the archives; the first candidate when none has them
    (the one an error message should name)."""
    candidates = [REPO.parent / "shared" / "clients"]
    origin = _origin()
    if origin is not None:
        candidates.append(origin.parent / "shared" / "clients")
    override = os.environ.get("AGENT_HOST_CLIENTS")
    if override:
        return Path(override)
    return next((c for c in candidates if c.is_dir()), candidates[0])


def _origin() -> Path | None:
    """The local repository this one was cloned from, if it was cloned from a path."""
    try:
        url = subprocess.run(
            ["git", "-C", str(REPO), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    url = url.removeprefix("file://")
    if not url.startswith("/"):
        return None
    path = Path(url)
    return path.parent if path.name == ".git" else path
