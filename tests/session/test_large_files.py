"""The file tools hold no file whole past MAX_FILE_BYTES (8 MiB): on a 2 GiB file
read_file reads a window, grep says it did not search it, and write_file,
edit_file and delete_file refuse (its old content could not be snapshotted, so
the change could not be undone) -- each in bounded memory, with nothing of the
file in the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost
from agent_host.session.limits import MAX_FILE_BYTES

pytestmark = pytest.mark.timeout(300)

SIZE = 2 << 30
"""big.log: 1,500 lines of text, then zeros (a sparse file) up to 2 GiB."""
BOUND = 64 << 20
"""What the tools may allocate at their peak, in bytes: a few windows of 1 MiB."""
TEXT_LINES = 1500

CALLS = [
    ("read_file", {"path": "big.log"}),
    ("read_file", {"path": "big.log", "offset": 50, "limit": 3}),
    ("grep", {"pattern": "needle"}),
    ("write_file", {"path": "big.log", "content": "small now\n"}),
    ("edit_file", {"path": "big.log", "old_string": "line 7\n", "new_string": "seven\n"}),
    ("delete_file", {"path": "big.log"}),
]


@pytest.fixture
def ws(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    with open(root / "big.log", "wb") as f:
        f.write(b"".join(b"line %d\n" % n for n in range(1, TEXT_LINES + 1)))
        f.truncate(SIZE)
    (root / "small.txt").write_text("a needle in a small file\n")
    return root


def script(tmp_path) -> str:
    steps = [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in CALLS]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [*steps, {"text": "done"}]}))
    return f"scripted:{path}"


def store_bytes(store: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in store.rglob("*") if p.is_file())


def check_results(results: list[str], ws: Path) -> None:
    read, window, grep, write, edit, delete = results
    assert "     1\tline 1" in read and f"{TEXT_LINES:6}\tline {TEXT_LINES}" in read
    assert f"read on with offset={TEXT_LINES + 1}" in read
    assert window.splitlines()[:3] == ["    50\tline 50", "    51\tline 51", "    52\tline 52"]
    assert "small.txt:1:a needle" in grep and "not searched" in grep and "big.log" in grep
    for refused in (write, edit, delete):
        assert f"{SIZE:,} bytes" in refused and "could not be undone" in refused
    assert (ws / "big.log").stat().st_size == SIZE


async def test_the_tools_on_a_2_gib_file_stay_in_bounded_memory(tmp_path, ws):
    store = tmp_path / "store"
    host = AgentHost(store=str(store), model=script(tmp_path), workdir=ws, approval="auto")
    tracemalloc.start()
    try:
        result = await host.send("look at big.log")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        log = await host.store.read(host.session_id)
        await host.close()
    assert result.stop_reason == "end_turn"
    print(f"tracemalloc peak: {peak / 2**20:.1f} MiB")
    assert peak < BOUND, f"peak {peak / 2**20:.0f} MiB"
    results = [e.output for e in log if type(e) is ev.ToolResult]
    check_results(results, ws)
    assert not [e for e in log if type(e) is ev.FileSnapshot]
    assert store_bytes(store) < MAX_FILE_BYTES


MEASURED = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(done.stdout[-4000:], done.stderr[-4000:], file=sys.stderr)
"""
"""Runs a command; prints its exit code and the largest RSS (KiB) of its process tree."""


def test_agent_host_run_on_a_2_gib_file_stays_small(tmp_path, ws):
    store = tmp_path / "store"
    command = [
        *(sys.executable, "-m", "agent_host", "run", "look at big.log"),
        *("--store", str(store), "--workspace", str(ws), "--model", script(tmp_path)),
        *("--approve", "auto", "--json"),
    ]
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *command],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "AGENT_HOST_STORE": str(store)},
    )
    code, max_rss_kib = map(int, done.stdout.split())
    assert code == 0, done.stderr
    print(f"max RSS: {max_rss_kib >> 10} MiB")
    # agent-host run alone: ~100 MiB; reading the file whole took 2 GiB more
    assert max_rss_kib < 400 << 10, f"{max_rss_kib >> 10} MiB; {done.stderr[-2000:]}"
    assert store_bytes(store) < MAX_FILE_BYTES
    assert (ws / "big.log").stat().st_size == SIZE


# -- read_file's window of a large file, edge by edge


async def read(root: Path, **arguments) -> str:
    from agent_host.session.tools import ToolContext, run_tool
    from agent_host.session.workspace import DiskWorkspace

    async def no_changes(path: str, data: bytes | None) -> None:
        raise AssertionError("read_file changed a file")

    outcome = await run_tool(
        "read_file", arguments, ToolContext(DiskWorkspace([root]), change_file=no_changes)
    )
    return ("ERROR " if outcome.is_error else "") + outcome.output


def large_text(path: Path, lines: int, tail: bytes = b"") -> None:
    row = b"%07d " + b"x" * 92 + b"\n"  # 100 bytes a line
    with open(path, "wb") as f:
        for start in range(0, lines, 10_000):
            f.write(b"".join(row % n for n in range(start + 1, min(lines, start + 10_000) + 1)))
        f.write(tail)


async def test_a_window_deep_in_a_large_file_and_its_end(tmp_path):
    large_text(tmp_path / "big.txt", 100_000, tail=b"last line, no line break")  # ~10 MB
    middle = await read(tmp_path, path="big.txt", offset=77_777, limit=2)
    assert middle.splitlines()[:2] == [
        f" 77777\t0077777 {'x' * 92}",
        f" 77778\t0077778 {'x' * 92}",
    ]
    assert "read on with offset=77779" in middle
    end = await read(tmp_path, path="big.txt", offset=99_999)
    assert end.splitlines() == [
        f" 99999\t0099999 {'x' * 92}",
        f"100000\t0100000 {'x' * 92}",
        "100001\tlast line, no line break",
    ]
    past = await read(tmp_path, path="big.txt", offset=100_002)
    assert past.startswith("ERROR") and "past the end" in past


async def test_a_line_longer_than_the_window_shows_its_start(tmp_path):
    with open(tmp_path / "one.txt", "wb") as f:
        f.write(b"y" * (MAX_FILE_BYTES + 1))
    shown = await read(tmp_path, path="one.txt")
    first, *notes = shown.splitlines()
    assert first.startswith("     1\tyyyy") and "line cut" in first
    assert any("runs on past" in note for note in notes)
    assert any("read on with offset=2" in note for note in notes)
