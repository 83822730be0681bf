"""A server SIGKILLed while a turn's command runs: the command does not outlive it,
and the next server restores the turn exactly -- the command's changes included,
though they were never logged before the kill. Unconfined (sandbox ``full``), the
command's processes are followed by host pid and ended by the watchdog; confined,
bubblewrap's ``--die-with-parent`` ends its pid namespace with the server."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_host.session.workspace.processes import read_proc

from ..conftest import make_backend
from .conftest import request as rpc
from .conftest import wait_until

COMMAND = "echo changed > a.txt; echo new > c.txt; sleep 30 & echo $! > {pidfile}; wait"


def tree(root) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def gone(pid: int) -> bool:
    proc = read_proc(pid)
    return proc is None or proc.zombie


@pytest.mark.parametrize("backend_name", ["file", "sqlite", "postgres"])
async def test_a_server_killed_mid_command_restores_exactly_and_leaves_no_command(
    backend_name, agents, workspace, tmp_path, request: pytest.FixtureRequest
):
    store = make_backend(backend_name, tmp_path / "stores", request).url
    (tmp_path / "stores").mkdir(exist_ok=True)
    (workspace / "a.txt").write_text("a as the user left it\n")
    (workspace / "b.txt").write_text("b as the user left it\n")
    before = tree(workspace)
    pidfile = tmp_path / "sleep.pid"
    steps = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b2\n"}}]},
        {
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": COMMAND.format(pidfile=pidfile)}}
            ]
        },
        {"text": "done"},
    ]
    doomed = await agents(steps, store=store, options={"sandbox": "full"})
    session = (await rpc(doomed, "session/new", {}))["sessionId"]
    turn = asyncio.ensure_future(
        rpc(doomed, "session/send", {"sessionId": session, "prompt": "go"}, timeout=60)
    )
    await wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 30, "the command")
    sleeper = int(pidfile.read_text())
    assert not gone(sleeper)
    doomed._server.kill()  # SIGKILL: nothing of the server's runs after this
    await doomed._server.wait()
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)

    deadline = time.monotonic() + 10
    while not gone(sleeper) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert gone(sleeper), "the command outlived the server"
    assert tree(workspace) == {**before, "b.txt": "b2\n", "a.txt": "changed\n", "c.txt": "new\n"}

    after = await agents([{"text": "-"}], store=store)
    (checkpoint,) = (await rpc(after, "session/checkpoints", {"sessionId": session}))["checkpoints"]
    assert sorted(checkpoint["files"]) == ["a.txt", "b.txt", "c.txt"]
    done = await rpc(after, "session/restore", {"sessionId": session, "seq": checkpoint["seq"]})
    assert sorted(done["restoredFiles"]) == ["a.txt", "b.txt", "c.txt"]
    assert done["conflicts"] == [] and done["notCaptured"] == []
    assert tree(workspace) == before


async def test_a_confined_command_dies_with_a_killed_server(agents, workspace):
    late = "sh -c 'sleep 2; echo late > late.txt' >/dev/null 2>&1 & echo go > go.txt; wait"
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": late}}]},
        {"text": "done"},
    ]
    doomed = await agents(steps)  # the default sandbox, workspace-write
    turn = asyncio.ensure_future(rpc(doomed, "session/send", {"prompt": "go"}, timeout=60))
    await wait_until(lambda: (workspace / "go.txt").exists(), 30, "the command")
    doomed._server.kill()
    await doomed._server.wait()
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)
    await asyncio.sleep(3)
    assert not (workspace / "late.txt").exists(), "the command outlived the server"
