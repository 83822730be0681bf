"""No tool holds the event loop (or the GIL) long: ``session/list`` is answered
promptly while each tool runs its worst case in a real ``agent-host serve``.

Each case runs one tool call of the scripted model on a workspace made to hurt it
(a 100 MB file, 20,000 files, a catastrophic regex, a command flooding output, a
multi-megabyte MCP result, a 500,000-line file rewritten with 4 MB), while the test sends
``session/list`` every 20 ms and times each answer. The bound is loose enough for a
loaded two-core machine and far below what a blocking tool costs (seconds).

The control proves the measurement can fail: the same case in a server whose
``asyncio.to_thread`` runs its function inline, on the event loop -- what a tool
that does its work synchronously looks like -- must breach the bound.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

import pytest

from tests.session.mcp.conftest import APP

from .conftest import write_script
from .wire import RawServer

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.exclusive]  # times answers

P99_BOUND = 0.25
"""Seconds: what 99 in 100 session/list answers take at most while a tool runs."""
CASE_BOUNDS = {"mcp_result": 0.5}
"""Cases allowed more, and why. mcp_result: an MCP call is now captured write-ahead
(issue 21 item 6): the 20,000-file index is walked and stored before the 8 MB result
is read and masked, and the two contend for the GIL (p99 290-380 ms in the full
suite, under 250 ms alone). A result handled on the loop measured 1,463 ms; capture
by watching (issue 27) is what brings this case back under P99_BOUND."""
PROBE_EVERY = 0.02
ATTEMPTS = 3

HUGE_LINES = 1_000_000
"""huge.txt: 1,000,000 lines of 100 bytes."""
TREE_FILES = 20_000
BIG_WRITE = 4 << 20
MCP_RESULT = 8 << 20

SERVE_WATCHED = (
    "import asyncio, sys\n"
    "class Policy(asyncio.DefaultEventLoopPolicy):\n"
    "    def new_event_loop(self):\n"
    "        loop = super().new_event_loop()\n"
    "        loop.set_debug(True)\n"
    "        loop.slow_callback_duration = 0.05\n"
    "        return loop\n"
    "asyncio.set_event_loop_policy(Policy())\n"
)
"""asyncio's debug mode logs every step of the loop over 50 ms (with what ran):
the failure message names what held it."""
SLOW = re.compile(
    r"Executing <(?:Task|Handle)[^\n]*?(?:coro=<|<)([\w.]+)\(\)[^\n]*? took ([\d.]+) seconds"
)

INLINE_THREADS = (
    "import asyncio, contextvars, functools, sys\n"
    "async def inline(func, /, *args, **kwargs):\n"
    "    return contextvars.copy_context().run(functools.partial(func, *args, **kwargs))\n"
    "asyncio.to_thread = inline\n"
)
MAIN = "from agent_host.cli import main\nsys.exit(main(sys.argv[1:]))\n"
"""A server whose threads run on the event loop: every tool blocks as it would if
it did its work synchronously."""


@pytest.fixture(scope="module")
def big_workspace(tmp_path_factory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("latency") / "ws")


def make_workspace(root: Path) -> Path:
    root.mkdir()
    line = b"x" * 99 + b"\n"
    with open(root / "huge.txt", "wb") as f:
        for _ in range(HUGE_LINES // 10_000):
            f.write(line * 10_000)
    # 6.7 MB: under the 8 MiB past which the file tools do not change a file
    (root / "rewrite.txt").write_bytes(b"".join(b"old line %d\n" % i for i in range(500_000)))
    hostile = (b"a" * 30 + b"!\n") * 300
    for i in range(TREE_FILES):
        folder = root / "tree" / f"d{i % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_bytes(hostile if i % 10 == 0 else b"plain text\n")
    return root


def new_text(size: int) -> str:
    row = "new line, quite unlike the old ones\n"
    return row * (size // len(row))


CASES: dict[str, dict] = {
    "read_file": {"name": "read_file", "arguments": {"path": "huge.txt", "offset": 999_000}},
    "write_file": {
        "name": "write_file",
        "arguments": {"path": "rewrite.txt", "content": "(set below)"},
    },
    "grep_re2": {"name": "grep", "arguments": {"pattern": "(a+)+$", "path": "tree"}},
    "grep_python": {"name": "grep", "arguments": {"pattern": "(?=a)(a+)+$", "path": "tree"}},
    "list_files": {"name": "list_files", "arguments": {"pattern": "**/*.txt"}},
    "command_flood": {
        "name": "run_command",
        "arguments": {"command": "yes 'flooding the output' | head -c 300000000"},
    },
    "checkpoint_capture": {"name": "run_command", "arguments": {"command": "touch tree/new.txt"}},
    "mcp_result": {"name": "mcp__t__echo", "arguments": {"text": "(set below)"}},
}


def call_for(case: str) -> dict:
    call = json.loads(json.dumps(CASES[case]))
    if case == "write_file":
        call["arguments"]["content"] = new_text(BIG_WRITE)
    if case == "mcp_result":
        call["arguments"]["text"] = "m" * MCP_RESULT
    return call


def answer_times(server: RawServer, turn_id: str, limit: float = 240.0) -> list[float]:
    """session/list answer times until the turn answers."""
    times: list[float] = []
    deadline = time.monotonic() + limit
    while server.response(turn_id, timeout=0) is None:
        assert time.monotonic() < deadline, "the turn did not finish"
        started = time.monotonic()
        answer = server.call("session/list", {}, timeout=60)
        assert "result" in answer, answer
        times.append(time.monotonic() - started)
        time.sleep(PROBE_EVERY)
    return times


def run_case(case: str, workspace: Path, tmp_path: Path, *, inline: bool = False) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    call = call_for(case)
    model = write_script(tmp_path / f"{case}.json", [{"tool_calls": [call]}, {"text": "done"}])
    prelude = SERVE_WATCHED + (INLINE_THREADS if inline else "")
    server = RawServer(cwd=workspace, command=[sys.executable, "-c", prelude + MAIN, "serve"])
    options = {}
    if case == "mcp_result":
        options["mcpServers"] = [
            {"name": "t", "command": sys.executable, "args": [APP, "stdio"], "env": []}
        ]
    try:
        answer = server.call(
            "initialize",
            {
                "processId": None,
                "rootUri": workspace.as_uri(),
                "capabilities": {},
                "initializationOptions": {
                    "store": str(tmp_path / "store"),
                    "model": model,
                    "approval": "auto",
                    **options,
                },
            },
            timeout=60,
        )
        assert "result" in answer, answer
        server.notify("initialized", {})
        server.call("session/list", {}, timeout=60)  # warm: imports done
        turn = server.send("session/send", {"prompt": f"run {case}"})
        times = answer_times(server, turn)
        result = server.response(turn, timeout=0)
    finally:
        server.close(timeout=60)
    assert result is not None and "result" in result, result
    times.sort()
    return {
        "slow": [
            f"{what} {float(took) * 1000:.0f} ms"
            for what, took in SLOW.findall(server.stderr.decode(errors="replace"))
        ],
        "case": case,
        "answers": len(times),
        "p50": statistics.median(times),
        "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
        "max": times[-1],
    }


def describe(figures: dict) -> str:
    slow = "; ".join(figures["slow"][:5])
    return (
        f"{figures['case']}: {figures['answers']} answers, p50 {figures['p50'] * 1000:.0f} ms, "
        f"p99 {figures['p99'] * 1000:.0f} ms, max {figures['max'] * 1000:.0f} ms"
        + (f" (the loop's slow steps: {slow})" if slow else "")
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_session_list_is_answered_promptly_while_a_tool_runs(case, big_workspace, tmp_path):
    bound = CASE_BOUNDS.get(case, P99_BOUND)
    runs = [run_case(case, big_workspace, tmp_path / "1")]
    while runs[-1]["p99"] >= bound and len(runs) < ATTEMPTS:
        # The machine is shared (other test runs, two cores): one stall of the whole
        # box is not the tool's. A tool that blocks misses the bound every time.
        runs.append(run_case(case, big_workspace, tmp_path / str(len(runs) + 1)))
    best = min(runs, key=lambda f: f["p99"])
    print(" | ".join(describe(f) for f in runs))
    assert best["answers"] >= 3, f"the tool finished too fast to measure: {describe(best)}"
    assert best["p99"] < bound, " | ".join(describe(f) for f in runs)


# Cases whose work the engine does itself in threads (not a child process): made to
# block, the measurement must catch it. (write_file's costly part, the diff, is not
# threaded but skipped unless a prompt shows it: inline threads barely slow it.)
BLOCKABLE = ["read_file", "grep_re2", "list_files", "checkpoint_capture"]


@pytest.mark.parametrize("case", BLOCKABLE)
def test_the_measurement_catches_a_tool_that_blocks(case, big_workspace, tmp_path):
    figures = run_case(case, big_workspace, tmp_path, inline=True)
    print(describe(figures))
    assert figures["max"] > P99_BOUND, describe(figures)


def test_the_control_server_still_works(tmp_path):
    """The inline-threads server is a working server: its slowness is the tools'."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    model = write_script(tmp_path / "s.json", [{"text": "hi"}])
    server = RawServer(cwd=root, command=[sys.executable, "-c", INLINE_THREADS + MAIN, "serve"])
    try:
        server.initialize(root, tmp_path / "store", model)
        sent = server.call("session/send", {"prompt": "hello"}, timeout=60)
    finally:
        server.close()
    assert sent["result"]["stopReason"] == "end_turn"
