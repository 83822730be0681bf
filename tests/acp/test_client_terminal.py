"""Commands in the client's terminal over ACP: create, wait, output, release; the
output reaches the model, the files a command makes are restored away, a timeout
or a cancel kills it, and a client without terminals is not asked."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from contextlib import suppress
from typing import Any

from acp import schema as s

from .conftest import RecordingClient, new_session, results, say

TERMINAL = s.ClientCapabilities(terminal=True)


class TerminalClient(RecordingClient):
    """An editor whose terminals really run the command (a subprocess each), and
    that records every terminal/* call as (method, terminal id)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []
        self.created: list[dict[str, Any]] = []
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._readers: dict[str, asyncio.Task[bytes]] = {}
        self._ids = itertools.count(1)

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, **kwargs: Any
    ) -> s.CreateTerminalResponse:
        tid = f"term-{next(self._ids)}"
        self.calls.append(("create", tid))
        self.created.append({"command": command, "args": args, **kwargs})
        proc = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=kwargs.get("cwd"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        self._procs[tid] = proc
        self._readers[tid] = asyncio.create_task(proc.stdout.read())
        return s.CreateTerminalResponse(terminal_id=tid)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> s.WaitForTerminalExitResponse:
        self.calls.append(("wait", terminal_id))
        code = await self._procs[terminal_id].wait()
        if code < 0:
            return s.WaitForTerminalExitResponse(signal=signal.Signals(-code).name)
        return s.WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> s.TerminalOutputResponse:
        self.calls.append(("output", terminal_id))
        output = await asyncio.wait_for(self._readers[terminal_id], 5)
        return s.TerminalOutputResponse(output=output.decode(), truncated=False)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.calls.append(("kill", terminal_id))
        with suppress(ProcessLookupError):
            os.killpg(self._procs[terminal_id].pid, signal.SIGKILL)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.calls.append(("release", terminal_id))
        with suppress(ProcessLookupError):
            os.killpg(self._procs.pop(terminal_id).pid, signal.SIGKILL)

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]


def run(command: str, **extra: Any) -> dict:
    return {"name": "run_command", "arguments": {"command": command, **extra}}


async def test_a_command_runs_in_the_terminal_and_rewind_removes_its_file(spawn, workspace):
    client = TerminalClient()
    steps = [{"tool_calls": [run("echo made > made.txt; echo done")]}, {"text": "Ran it."}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=TERMINAL) as (
        conn,
        _,
    ):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "make a file")
        made = (workspace / "made.txt").read_text()
        await say(conn, sid, "/rewind -1")

    assert client.methods() == ["create", "wait", "output", "release"]
    [created] = client.created
    # env -i, the policy's variables, then the shell: nothing of the editor's env
    assert created["command"] == "/usr/bin/env" and created["args"][0] == "-i"
    assert created["args"][-3:] == ["/bin/sh", "-c", "echo made > made.txt; echo done"]
    assert {e.name: e.value for e in created["env"]}["PATH"] == os.environ["PATH"]
    assert created["cwd"] == str(workspace.resolve())
    [output] = results(client, sid)
    assert "done" in output and "[exit code 0]" in output
    shown = [
        u
        for u in client.of("tool_call_update", sid)
        if u.status == "in_progress" and any(c.type == "terminal" for c in u.content)
    ]
    assert [c.terminal_id for c in shown[0].content] == ["term-1"]
    assert made == "made\n"
    assert not (workspace / "made.txt").exists()


async def test_a_command_that_times_out_is_killed(spawn, workspace):
    client = TerminalClient()
    steps = [{"tool_calls": [run("echo started; sleep 30", timeout=1)]}, {"text": "Too slow."}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=TERMINAL) as (
        conn,
        _,
    ):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "wait")

    assert client.methods() == ["create", "wait", "kill", "output", "release"]
    [output] = results(client, sid)
    assert "started" in output and "timed out after 1 s" in output


async def test_cancel_kills_and_releases_the_terminal(spawn, workspace):
    client = TerminalClient()
    steps = [{"tool_calls": [run("sleep 30")]}, {"text": "Never."}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=TERMINAL) as (
        conn,
        _,
    ):
        sid = await new_session(conn, workspace)
        turn = asyncio.create_task(say(conn, sid, "wait"))
        for _ in range(100):
            if ("wait", "term-1") in client.calls:
                break
            await asyncio.sleep(0.05)
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(turn, 10)

    assert answer.stop_reason == "cancelled"
    assert client.methods() == ["create", "wait", "kill", "release"]


async def test_a_client_without_terminals_is_never_asked(spawn, workspace):
    client = TerminalClient()
    steps = [{"tool_calls": [run("echo here")]}, {"text": "Ran it."}]
    async with spawn(steps, "--approval", "auto", client=client) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "run")

    assert client.calls == []
    assert "here" in results(client, sid)[0]
