"""The real LiteLLM proxy for the tests, installed once into a private venv.

Not a ``test`` extra: the proxy brings some 70 packages (boto3, azure, polars,
numpy...), pins some of ours lower (websockets 15 for our 16) and, up to 1.106,
``openai<3`` where agent-host needs ``openai>=3.57``. It is a separate process anyway,
so it gets a venv of its own, kept between runs under ``AGENT_HOST_TEST_CACHE``
(default ``~/.cache/agent-host-tests``), keyed by the pinned release and the Python
it runs on, made under a file lock so parallel runs install it once: about 80 s on
two cores, with pip's cache cold; later runs start the proxy in about 12 s.

The pin is the newest release whose ``[proxy]`` extra installs from this machine's
package index: 1.108.8 and later pin ``litellm-enterprise`` or
``litellm-proxy-extras`` releases (0.1.79.post2, 0.4.110.post1, 0.4.113...) or, from
1.110, a ``litellm-proxy`` package that the index lacks.

``AGENT_HOST_LITELLM`` names another ``litellm`` executable to use instead. Without
the proxy the test skips, and fails under ``AGENT_HOST_REQUIRE_EDITORS=1`` (CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from ...node_toolchain import unavailable

LITELLM = "1.108.7"
INSTALL_TIMEOUT = 900


def cache_dir() -> Path:
    root = os.environ.get("AGENT_HOST_TEST_CACHE") or Path.home() / ".cache" / "agent-host-tests"
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    return Path(root) / f"litellm-proxy-{LITELLM}-{python}"


def _unavailable(reason: str) -> None:
    unavailable(f"the LiteLLM proxy {LITELLM} is not available: {reason}")


def litellm_executable() -> str:
    """The ``litellm`` executable, installing the pinned proxy first if needed."""
    given = os.environ.get("AGENT_HOST_LITELLM")
    if given:
        return given
    folder = cache_dir()
    venv = folder / "venv"
    executable = venv / "bin" / "litellm"
    marker = folder / "installed"  # written last: a half-made venv is made again
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock", timeout=INSTALL_TIMEOUT + 60):
        if marker.exists() and executable.exists():
            return str(executable)
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
             "--disable-pip-version-check", f"litellm[proxy]=={LITELLM}"],
        ]  # fmt: skip
        for step in steps:
            try:
                done = subprocess.run(
                    step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                _unavailable(f"{' '.join(step)}: {exc}")
                raise AssertionError("unreachable") from exc
            if done.returncode != 0:
                tail = "\n".join(
                    line for line in done.stderr.splitlines() if "is ignored" not in line
                )[-5000:]  # pip's noise about the absent local index folders
                _unavailable(f"{' '.join(step)} failed:\n{tail}")
        if not executable.exists():
            _unavailable(f"the install left no {executable}")
        marker.write_text(LITELLM + "\n")
    return str(executable)
