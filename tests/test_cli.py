"""The agent-host command, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys

from agent_host.session import open_store
from agent_host.session.events import FileSnapshot, UserPrompt


def agent_host(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_host", *args], capture_output=True, text=True, timeout=60
    )


def test_demo_runs_a_whole_session_offline(tmp_path):
    store = tmp_path / "store"
    result = agent_host("demo", "--store", str(store))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("[end_turn]") == 3
    assert "changed greet.py" in out and "created test_greet.py" in out
    assert "deleted NOTES.md" in out
    assert "restore to before 'Add a test for greet': 2 files (NOTES.md, test_greet.py)" in out
    files_lines = [line for line in out.splitlines() if line.startswith("  files:")]
    assert files_lines == [
        "  files: README.md, greet.py, test_greet.py",
        "  files: NOTES.md, README.md, greet.py",
        "  files: README.md, greet.py, test_greet.py",
    ]
    (info,) = [
        json.loads(line)
        for line in agent_host("sessions", "--store", str(store), "--json").stdout.splitlines()
    ]
    assert info["turns"] == 3
    assert info["title"] == "Add a docstring to greet.py"


async def test_sessions_lists_newest_first(tmp_path):
    store = open_store(tmp_path / "s")
    await store.append("older", [UserPrompt(text="first")])
    await store.append("newer", [UserPrompt(text="second")])
    result = agent_host("sessions", "--store", str(tmp_path / "s"))
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("newer") and lines[0].endswith("second")
    assert lines[1].startswith("older")


async def test_gc_removes_unreferenced_snapshots(tmp_path):
    store = open_store(f"sqlite://{tmp_path}/s.db")
    kept = await store.blobs.put(b"kept")
    await store.blobs.put(b"orphan")
    await store.append("s", [FileSnapshot(path="a", before=kept, after=None)])
    await store.close()
    result = agent_host("gc", "--store", f"sqlite://{tmp_path}/s.db", "--grace", "0")
    assert result.returncode == 0
    assert result.stdout.startswith("removed 1 snapshots")


def test_errors_and_usage_have_distinct_exit_codes():
    bad = agent_host("sessions", "--store", "postgres://nowhere/x")
    assert bad.returncode == 1
    assert "unsupported store URL" in bad.stderr and "Traceback" not in bad.stderr
    assert agent_host().returncode == 2
    assert agent_host("no-such-command").returncode == 2
