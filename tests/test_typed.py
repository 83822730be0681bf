"""The package is typed for its users (PEP 561): it ships ``py.typed``, and a user's
type checker reads ``AgentHost``'s annotations instead of stopping at ``import-untyped``."""

from __future__ import annotations

import importlib.metadata
import json
import site
import subprocess
import sys
import venv
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

# The README's example, as a user's strictly typed code would hold it. The last line
# is wrong on purpose: its ignore is "unused" (an error under --strict) unless the
# checker knows send's parameter types, so a package read as Any fails too.
USER_CODE = """\
from agent_host import AgentHost


async def main() -> None:
    host = AgentHost(store="file:///tmp/sessions", model="openai/gpt-4.1-mini", workdir=".")
    r = await host.send("Add a docstring to a.py")
    checkpoint: int = r.checkpoint
    await host.restore(host.session_id, checkpoint)
    await host.undo_restore()
    await host.send(42)  # type: ignore[arg-type]
"""


def installed_package() -> Path:
    """Where pip put agent_host: in site-packages, or for an editable install the source
    tree its import hook maps to. (Not ``import agent_host``: pytest puts the clone
    first on sys.path, and the build leaves agent_host.egg-info in it.)"""
    (dist,) = importlib.metadata.distributions(name="agent-host", path=site.getsitepackages())
    url = json.loads(dist.read_text("direct_url.json") or "{}")
    if url.get("dir_info", {}).get("editable"):
        return Path(url2pathname(urlparse(url["url"]).path)) / "agent_host"
    return Path(str(dist.locate_file("agent_host")))


def test_the_installed_package_has_py_typed():
    # Under .ci/run (a plain install) this is what the wheel put in site-packages.
    assert (installed_package() / "py.typed").is_file()


@pytest.mark.slow  # mypy reads the package and its dependencies: ~20 s cold
def test_users_typed_code_type_checks_against_the_package(tmp_path: Path):
    package = installed_package()
    # A bare interpreter whose site-packages (by a .pth) holds the package and its
    # dependencies, so mypy finds agent_host as installed -- where PEP 561 applies --
    # whether it is installed plainly or editable (an import hook mypy cannot follow).
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    env_site = subprocess.run(
        [python, "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = [str(package.parent), *site.getsitepackages()]
    (Path(env_site) / "under_test.pth").write_text("".join(f"{p}\n" for p in paths))
    (tmp_path / "user.py").write_text(USER_CODE)

    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-executable", python, "user.py"],
        cwd=tmp_path,  # away from our pyproject's [tool.mypy]
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "import-untyped" not in run.stdout
