"""Two hosts sharing nothing but a PostgreSQL database.

Each host is a process with its own data, temp and home folders and its own copy
of the project, mounted (in a mount namespace of its own) at the same path, as two
machines would have the project checked out at the same place. Host A runs turns;
host B lists the sessions, reads the history, restores A's session -- the file
snapshots can only come from the database -- and undoes it, and resumes the session
with a turn of its own, which A then sees; while A's turn runs, B's lease is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ...pg_server import postgres_backend

pytestmark = pytest.mark.slow

ORIGINAL = "def greet(name):\n    return f'Hi, {name}!'\n"
EDITED = "def greet(name):\n    return f'Hello, {name}!'\n"
EDIT = [
    {
        "text": "I'll make greet polite.",
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {"path": "greet.py", "old_string": "Hi", "new_string": "Hello"},
            }
        ],
    },
    {"text": "Done."},
]
ADD = [
    {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.md", "content": "# Notes\n"}}
        ]
    },
    {"text": "Added notes."},
]
REPLY = [{"text": "Hello from host B"}]
# A's slow turn runs a command that waits for the test's go (a file in A's checkout):
# A is mid-turn for as long as B takes to try, however busy the machine.
WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.05; done"
SLOW = [
    {
        "text": "thinking slowly",
        "tool_calls": [{"name": "run_command", "arguments": {"command": WAIT_FOR_GO}}],
    },
    {"text": "Done slowly."},
]
# The scripted model answers a session's turns from one list of steps, in order.
SESSION = EDIT + ADD + REPLY + SLOW
REPO = Path(__file__).resolve().parents[3]


class Host:
    def __init__(self, name: str, base: Path, mount: Path, project: Path, store: str) -> None:
        self.name, self.mount, self.store = name, mount, store
        self.root = base / name
        self.copy = self.root / "project"
        shutil.copytree(project, self.copy)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "AGENT_HOST_"))}
        for folder in ("data", "tmp", "home", "state", "cache"):
            (self.root / folder).mkdir()
        env.update(
            HOME=str(self.root / "home"),
            TMPDIR=str(self.root / "tmp"),
            XDG_DATA_HOME=str(self.root / "data"),
            XDG_STATE_HOME=str(self.root / "state"),
            XDG_CACHE_HOME=str(self.root / "cache"),
            AGENT_HOST_STORE=store,
        )
        self.env = env

    def command(self, *args: str) -> list[str]:
        inner = [sys.executable, "-m", "agent_host", *args, "--workspace", str(self.mount)]
        # The host's own copy at the shared path, seen by this process alone.
        script = 'mount --bind "$0" "$1" && shift && exec "$@"'
        return [
            "unshare", "--mount", "--propagation", "private",
            "sh", "-c", script, str(self.copy), str(self.mount), *inner,
        ]  # fmt: skip

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(*args),
            capture_output=True,
            text=True,
            timeout=120,
            env=self.env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            self.command(*args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )


def script(base: Path, name: str, steps: list[dict]) -> str:
    path = base / f"{name}.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def hosts(tmp_path, pg_database):
    if (
        shutil.which("unshare") is None
        or subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode
    ):
        pytest.fail("the two-host test needs unshare --mount (util-linux, as root)")
    store = postgres_backend(pg_database.create()).url
    project = tmp_path / "original"
    project.mkdir()
    (project / "greet.py").write_text(ORIGINAL)
    mount = tmp_path / "checkout"  # the path both hosts have their project at
    mount.mkdir()
    return (
        Host("a", tmp_path, mount, project, store),
        Host("b", tmp_path, mount, project, store),
        tmp_path,
    )


def test_two_hosts_share_sessions_snapshots_and_leases(hosts):
    a, b, base = hosts
    model = script(base, "session", SESSION)
    assert a.store == b.store and a.store.startswith("postgresql://")
    ok(a.run("run", "Polite", "--session", "s1", "--approve", "auto",
             "--model", model))  # fmt: skip
    ok(a.run("run", "Notes", "--session", "s1", "--approve", "auto",
             "--model", model))  # fmt: skip
    assert (a.copy / "greet.py").read_text() == EDITED
    assert (a.copy / "notes.md").exists()
    assert (b.copy / "greet.py").read_text() == ORIGINAL  # nothing but the database is shared
    assert not list((b.root / "data").rglob("*"))

    # B lists and reads what A did.
    (listed,) = [json.loads(line) for line in ok(b.run("sessions", "--json")).splitlines()]
    assert listed["sessionId"] == "s1" and listed["turns"] == 2
    assert listed["workspace"] == str(a.mount)
    history = ok(b.run("history", "s1"))
    assert "Polite" in history and "Notes" in history

    # B's checkout catches up with A's (a git pull would), then B restores the
    # session to before A's first prompt: the snapshots come from the database.
    shutil.rmtree(b.copy)
    shutil.copytree(a.copy, b.copy)
    checkpoints = [
        json.loads(line) for line in ok(b.run("checkpoints", "s1", "--json")).splitlines()
    ]
    first = checkpoints[0]["seq"]
    restored = json.loads(ok(b.run("restore", "s1", str(first), "--json")))
    assert sorted(restored["restoredFiles"]) == ["greet.py", "notes.md"]
    assert (b.copy / "greet.py").read_text() == ORIGINAL
    assert not (b.copy / "notes.md").exists()
    assert (a.copy / "greet.py").read_text() == EDITED  # A's checkout is A's own
    ok(b.run("undo-restore", "s1"))
    assert (b.copy / "greet.py").read_text() == EDITED
    assert (b.copy / "notes.md").read_text() == "# Notes\n"

    # B resumes the session; A sees B's turn.
    ok(b.run("run", "From B", "--session", "s1", "--approve", "auto",
             "--model", model))  # fmt: skip
    assert "From B" in ok(a.run("history", "s1"))
    (listed,) = [json.loads(line) for line in ok(a.run("sessions", "--json")).splitlines()]
    assert listed["turns"] == 3

    # While A's turn runs, B may not start one in the same session.
    slow = a.start("run", "Slowly", "--session", "s1", "--approve", "auto",
                   "--model", model)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "Slowly" not in ok(b.run("history", "s1")):
            assert time.monotonic() < deadline, "A's slow turn never began"
            assert slow.poll() is None, slow.communicate()
            time.sleep(0.2)
        refused = b.run("run", "Meanwhile", "--session", "s1",
                        "--model", model)  # fmt: skip
        assert refused.returncode == 1, refused.stderr
        assert "turn is running" in refused.stderr and "in another process (pid" in refused.stderr
        assert slow.poll() is None, "A's turn ended before its go: the lease was not tested"
    finally:
        (a.copy / "go").touch()  # A's command ends, and its turn
        out, err = slow.communicate(timeout=120)
    assert slow.returncode == 0, err
    assert "Done slowly." in out, out
    assert "Meanwhile" not in ok(a.run("history", "s1"))
