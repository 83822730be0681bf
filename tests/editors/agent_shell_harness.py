"""The harness of the Emacs agent-shell tests: a real Emacs running the pinned,
unmodified agent-shell 0.74.3 (with acp.el and shell-maker) against a real
``agent-host acp`` on the scripted model.

The archive is ``emacs-agent-shell-0.74.3.tar.gz`` in ``../shared/clients`` from the repo
root; each test module unpacks it into a temporary folder. Emacs (>= 29.1) runs
tests/editors/agent_shell/driver.el, which plays a plan -- prompts submitted in the
shell, a user's edits -- and writes what it saw as JSON. Under ``emacs --batch`` the
questions Emacs asks fail at once; in a terminal (``emacs -nw`` in a private tmux
server) they wait on the screen, where this harness reads them (capture-pane),
records them and answers ``y`` as a user in a hurry would, so the run goes on.

The agent is started through a small shell script that tees both directions of its
stdio to files: what it sent is checked against the ACP v1 schema
(tests/acp/schema_check.py).
Without Emacs >= 29.1, tmux or the archive the tests skip -- unless
AGENT_HOST_REQUIRE_EDITORS=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..acp import schema_check
from ..acp.schema_check import read_lines
from ..node_toolchain import unavailable
from .pinned_clients import clients_dir

REPO = Path(__file__).resolve().parents[2]
ARCHIVE_NAME = "emacs-agent-shell-0.74.3.tar.gz"
DRIVER = Path(__file__).resolve().parent / "agent_shell" / "driver.el"
PACKAGES = ("agent-shell", "acp.el", "shell-maker")
MIN_EMACS = (29, 1)
INSTALL_HINT = (
    "install Emacs >= 29.1 (Debian bookworm: apt-get install -t bookworm-backports emacs-nox) "
    "and tmux, or set AGENT_HOST_EMACS"
)
STEP_TIMEOUT = 20
"""Seconds the driver waits for the session and for each turn."""
RUN_TIMEOUT = 90
SCREEN = (120, 40)
QUESTION = re.compile(r"\?\s*\((?:y or n|yes or no|y, n, [^)]*)\)\s*$")
"""Emacs waiting for an answer: the echo area ends in its choices (y-or-n-p,
yes-or-no-p, the supersession question)."""
MAX_ANSWERS = 30
SECRET = re.compile(r"API_KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
DONE = "agent-host test: done"
"""What the driver shows in a terminal once its result is written."""


def find_emacs() -> str:
    """The Emacs to test with (the test is unavailable without one)."""
    emacs = os.environ.get("AGENT_HOST_EMACS") or shutil.which("emacs")
    if emacs is None:
        unavailable(f"the agent-shell tests need Emacs: none on PATH; {INSTALL_HINT}")
    assert emacs is not None
    try:
        out = subprocess.run(
            [emacs, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        out = f"{exc}"
    found = re.search(r"GNU Emacs (\d+)\.(\d+)", out)
    if not found or (int(found.group(1)), int(found.group(2))) < MIN_EMACS:
        unavailable(f"the agent-shell tests need Emacs >= 29.1, {emacs} is {out[:60]!r}")
    return emacs


def find_tmux() -> str:
    tmux = shutil.which("tmux")
    if tmux is None:
        unavailable(f"the agent-shell terminal tests need tmux; {INSTALL_HINT}")
    assert tmux is not None
    return tmux


def unpack_agent_shell(into: Path) -> Path:
    """The archive unpacked into ``into``: the folder holding the three packages."""
    found = clients_dir() / ARCHIVE_NAME
    if not found.is_file():
        unavailable(
            f"the agent-shell tests need {found} (pinned agent-shell 0.74.3); "
            "set AGENT_HOST_CLIENTS to the folder that holds it"
        )
    with tarfile.open(found) as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 on
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into)  # noqa: S202 -- our pinned fixture
    missing = [p for p in PACKAGES if not (into / p).is_dir()]
    assert not missing, f"{found} lacks {missing}"
    return into


def agent_host() -> list[str]:
    """This checkout's ``agent-host``: the venv's script, else the module."""
    script = Path(sys.executable).parent / "agent-host"
    return [str(script)] if script.exists() else [sys.executable, "-m", "agent_host"]


@dataclass
class Run:
    result: dict[str, Any]
    sent: list[dict]
    """What the agent sent Emacs, in order."""
    received: list[dict]
    """What Emacs sent the agent."""
    screen_questions: list[str] = field(default_factory=list)
    """The questions the terminal showed (each answered ``y``)."""
    screen: str = ""
    """The terminal's last screen."""

    @property
    def turns(self) -> list[dict]:
        return self.result["turns"]

    @property
    def questions(self) -> list[str]:
        """Every question Emacs asked: the driver's record and the screen's."""
        return self.result["questions"] + self.screen_questions

    def file(self, turn: int | None = None, name: str = "a.txt") -> tuple[Any, Any]:
        """(buffer text or None, disk text) of ``name`` after turn ``turn`` (None:
        at the end)."""
        files = self.result["files"] if turn is None else self.turns[turn]["files"]
        entry = next(f for f in files if f["name"] == name)
        return entry["buffer"], entry["disk"]

    def requests(self, method: str) -> list[dict]:
        return [m for m in self.sent if m.get("method") == method]

    def answer_to(self, request: dict) -> dict:
        """Emacs's response to the agent's ``request``."""
        return next(
            m for m in self.received if "method" not in m and m.get("id") == request.get("id")
        )

    def wire_problems(self) -> list[str]:
        return schema_check.problems(self.sent, self.received)


def _agent_script(base: Path, model: str, agent_env: dict[str, str]) -> Path:
    """The agent command agent-shell starts: agent-host, its stdio teed to files;
    ``agent_env`` set for agent-host alone (as an agent configuration would)."""
    argv = [*agent_host(), "acp", "--model", model, "--store", str(base / "store")]
    if agent_env:
        argv = ["env", *(f"{k}={v}" for k, v in agent_env.items()), *argv]
    command = shlex.join(argv)
    received, sent, log = (
        shlex.quote(str(base / n)) for n in ("received.jsonl", "sent.jsonl", "agent.log")
    )
    script = base / "agent.sh"
    script.write_text(
        "#!/bin/sh\n# agent-host acp, both directions of its stdio recorded as they pass\n"
        f"tee -a {received} | {command} 2>>{log} | tee -a {sent}\n"
    )
    script.chmod(0o755)
    return script


def play(
    emacs: str,
    lisp: Path,
    base: Path,
    *,
    script: Sequence[dict] = (),
    steps: Sequence[dict] = (),
    open_files: Sequence[str] = ("a.txt",),
    files: dict[str, str] | None = None,
    terminal: bool = False,
    model: str | None = None,
    drop_env: Sequence[str] = (),
    agent_env: dict[str, str] | None = None,
    step_timeout: float = STEP_TIMEOUT,
) -> Run:
    """Run agent-shell in Emacs against ``agent-host acp`` and play ``steps`` (the
    driver's: ``{"prompt": TEXT}``, ``{"edit": FILE, "text": TEXT}``, ``{"close":
    FILE}``, ``{"refuse_saves": FILE}``, ``{"follow": REGEXP}``) with the scripted
    model's ``script`` (or ``model``); ``open_files`` are open in buffers first.
    ``agent_env``: variables for agent-host only (Emacs gets no secrets);
    ``step_timeout``: seconds the driver waits for the session and each turn."""
    workspace = base / "ws"
    workspace.mkdir(parents=True)
    files = {"a.txt": "start\n"} if files is None else files
    for name, text in files.items():
        (workspace / name).write_text(text)
    if model is None:
        (base / "script.json").write_text(json.dumps({"steps": list(script)}))
        model = f"scripted:{base / 'script.json'}"
    result = base / "result.json"
    plan = base / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "workspace": str(workspace),
                "command": [str(_agent_script(base, model, agent_env or {}))],
                "files": list(files),
                "open": list(open_files),
                "steps": list(steps),
                "result": str(result),
                "timeout": step_timeout,
            }
        )
    )
    home = base / "home"
    home.mkdir()
    # Emacs (and the agent it starts) get no secrets of the test run's environment
    env = {k: v for k, v in os.environ.items() if k not in drop_env and not SECRET.search(k)}
    env |= {
        "AGENT_HOST_TEST_PLAN": str(plan),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    load = [a for p in PACKAGES for a in ("-L", str(lisp / p))] + ["-l", str(DRIVER)]
    run = Run({}, [], [])
    if terminal:
        _in_tmux(run, [emacs, "-nw", "-Q", *load], base, env, result)
    else:
        try:
            done = subprocess.run(
                [emacs, "--batch", "-Q", *load],
                cwd=workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"emacs --batch ran over {RUN_TIMEOUT} s: {_logs(base)}") from exc
        (base / "emacs.log").write_text(done.stdout + done.stderr)
    if not result.exists():
        raise AssertionError(f"the driver wrote no result: {_logs(base)}")
    run.result = json.loads(result.read_text(encoding="utf-8"))
    run.sent = read_lines(base / "sent.jsonl")
    run.received = read_lines(base / "received.jsonl")
    return run


def _in_tmux(run: Run, command: list[str], base: Path, env: dict, result: Path) -> None:
    """``command`` in a terminal of a private tmux server: read its screen until the
    driver's result is written, answering each question Emacs shows."""
    # a socket path must fit in 108 bytes: a short folder of its own, not the test's
    sockets = Path(tempfile.mkdtemp(prefix="ah-tmux-"))
    tmux = [find_tmux(), "-S", str(sockets / "s"), "-f", "/dev/null"]
    launcher = base / "emacs.sh"
    workspace = shlex.quote(str(base / "ws"))
    launcher.write_text(f"#!/bin/sh\ncd {workspace}\nexec {shlex.join(command)}\n")
    launcher.chmod(0o755)
    width, height = SCREEN
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", str(width), "-y", str(height), str(launcher)],
        env=env,
        check=True,
        timeout=30,
    )

    def screen() -> str:
        shown = subprocess.run(
            [*tmux, "capture-pane", "-p"], capture_output=True, text=True, timeout=30, check=False
        )
        return shown.stdout

    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not result.exists():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"emacs -nw ran over {RUN_TIMEOUT} s; screen:\n{screen()}\n{_logs(base)}"
                )
            lines = screen().rstrip("\n").splitlines()
            asked = lines[-1].rstrip() if lines and QUESTION.search(lines[-1].rstrip()) else None
            if asked is not None and len(run.screen_questions) < MAX_ANSWERS:
                run.screen_questions.append(asked)
                keys = ["yes", "Enter"] if "(yes or no)" in asked else ["y"]
                subprocess.run([*tmux, "send-keys", *keys], check=True, timeout=30)
                # Until Emacs takes the answer the question stays on the screen:
                # answering it twice would type into the shell.
                _until(lambda a=asked: screen().rstrip("\n").splitlines()[-1:] != [a], deadline)
                continue
            time.sleep(0.1)  # a screen has no event to await: read it again shortly
        # The driver's last words, drawn after everything else it shows.
        _until(lambda: DONE in screen(), deadline)
        run.screen = screen()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30, check=False)
        shutil.rmtree(sockets, ignore_errors=True)


def _until(condition: Any, deadline: float) -> None:
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def _logs(base: Path) -> str:
    parts = []
    for name in ("emacs.log", "agent.log"):
        path = base / name
        if path.exists():
            parts.append(f"--- {name}:\n{path.read_text(errors='replace')[-3000:]}")
    return "\n".join(parts) or "(no logs)"
