"""Commands end with their call: what a command left running in its session is
ended when the shell exits; what made a session of its own is reported as detached
and ended when the host closes. These are the unconfined commands' ways (sandbox
``full``): a confined command's processes live in a pid namespace of its own and
all end with it (tests/session/test_sandbox_escapes.py)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from agent_host.session.host import AgentHost
from agent_host.session.sandbox import Sandbox
from agent_host.session.workspace import DiskWorkspace
from agent_host.session.workspace.processes import CommandProcesses, tracking

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc"),
]
needs_setsid = pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid(1)")


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(b")") + 2 :].split()[0] not in (b"Z", b"X")


def gone_soon(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def kill(pid: int) -> None:
    if alive(pid):
        os.kill(pid, 9)


@pytest.fixture
def ws(tmp_path) -> DiskWorkspace:
    return DiskWorkspace([tmp_path], sandbox=Sandbox("full"))


async def test_a_background_job_is_gone_when_the_command_returns(ws):
    result = await ws.run_command("sleep 1003 >/dev/null 2>&1 & echo $!; echo after; exit 4")
    lines = result.output.splitlines()
    pid = int(lines[0])
    assert not alive(pid)  # right after the call, not some time later
    assert lines[1:] == ["after"] and result.exit_code == 4
    assert result.detached == [] and not result.timed_out


async def test_a_process_group_of_its_own_is_ended_too(ws):
    # As job control does (set -m in a shell with a terminal): a new group, same session.
    own_group = "import os, time; os.setpgid(0, 0); time.sleep(1004)"
    result = await ws.run_command(f"{sys.executable} -c '{own_group}' & echo $!; sleep 0.3")
    pid = int(result.output.split()[0])
    assert not alive(pid)
    assert result.exit_code == 0 and result.detached == []


async def test_one_that_ignores_sigterm_is_killed_after_the_grace(ws):
    started = time.monotonic()
    result = await ws.run_command(
        "sh -c 'trap \"\" TERM; sleep 1005' >/dev/null 2>&1 & echo $!; sleep 0.2"
    )
    pid = int(result.output.split()[0])
    assert gone_soon(pid, 1.0)
    assert time.monotonic() - started < 4


async def test_a_child_holding_the_output_still_lets_the_call_return(ws):
    started = time.monotonic()
    result = await ws.run_command("sleep 1006 & echo $!; echo done")
    assert time.monotonic() - started < 5
    assert result.output.splitlines()[1:] == ["done"] and result.exit_code == 0
    assert gone_soon(int(result.output.split()[0]))


async def test_late_output_of_a_background_child_is_still_captured(ws):
    result = await ws.run_command("(sleep 0.2; echo late) & echo early")
    assert result.output == "early\nlate\n" and result.exit_code == 0


@needs_setsid
async def test_a_setsid_process_is_reported_detached_and_ended_with_the_tracker(ws):
    processes = CommandProcesses()
    with tracking(processes):
        # Waits until the child is a session leader (its sid is its pid): a command
        # whose shell exits before the child's setsid() ran would have it ended with
        # the rest of its session, not reported detached.
        result = await ws.run_command(
            "setsid sleep 1007 >/dev/null 2>&1 & p=$!; "
            'while [ "$(cut -d\' \' -f6 /proc/$p/stat)" != "$p" ]; do sleep 0.01; done; '
            "echo $p"
        )
    pid = int(result.output.split()[0])
    try:
        assert result.detached == [pid] and alive(pid)
        assert f"session of its own (setsid): pid {pid}" in result.output
        processes.close()
        assert gone_soon(pid, 2.0)
    finally:
        kill(pid)


@needs_setsid
async def test_the_host_ends_what_its_turns_commands_detached_when_it_closes(tmp_path):
    # Waits until the setsid child leads its own session (as the test above does): a
    # shell that exits before the child's setsid() ran has it ended with the rest.
    command = (
        "setsid sleep 1008 >/dev/null 2>&1 & p=$!; "
        'while [ "$(cut -d\' \' -f6 /proc/$p/stat)" != "$p" ]; do sleep 0.01; done; '
        "echo $p; sleep 1009 >/dev/null 2>&1 &"
    )
    script = tmp_path / "s.json"
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
        {"text": "done"},
    ]
    script.write_text(json.dumps({"steps": steps}))
    ws = tmp_path / "ws"
    ws.mkdir()
    host = AgentHost(store="memory:", model=f"scripted:{script}", workdir=ws, sandbox="full")
    try:
        assert (await host.send("start it")).stop_reason == "end_turn"
        [tool] = [m for m in await host.history() if m["role"] == "tool"]
        pid = int(tool["content"].split()[0])
        assert alive(pid)  # the turn is over; a detached process outlives it
    finally:
        await host.close()
    try:
        assert gone_soon(pid, 2.0)
    finally:
        kill(pid)
