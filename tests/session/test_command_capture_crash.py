"""A command's capture is closed in the append that logs its result: a process killed
after the command ran but before that append leaves the capture begun and not ended,
and the next process finishes it -- the restore puts back what the command changed.

Every durable step of a turn running one command is a kill point (see crash_points);
each kill is checked, and the kills that land in that window (the command's changes
on disk, its result not logged) are counted: there must be some.
"""

from __future__ import annotations

import json

import pytest

from agent_host.session import events as ev
from agent_host.session import open_store
from agent_host.session.host import AgentHost

from .test_restore_crash import crasher, fast_tmp, files, store_url  # noqa: F401

pytestmark = pytest.mark.slow

COMMAND = "echo changed > a.txt; echo new > c.txt; rm d.txt"
TURN = [
    {"tool_calls": [{"name": "run_command", "arguments": {"command": COMMAND}}]},
    {"text": "done"},
]


async def logged(url: str, session: str) -> list[ev.Event]:
    store = open_store(url)
    try:
        return list(await store.read(session))
    finally:
        await store.close()


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_kill_between_a_command_and_its_result_leaves_the_capture_to_finish(
    backend,
    fast_tmp,  # noqa: F811
    crasher,  # noqa: F811
):
    url = store_url(backend, fast_tmp)
    ws = fast_tmp / "ws"
    ws.mkdir()
    for name in ("a.txt", "d.txt"):
        (ws / name).write_text(f"{name} as the user left it\n")
    before = files(ws)
    script = fast_tmp / "script.json"
    script.write_text(json.dumps({"steps": TURN}))
    checker = AgentHost(store=url, workdir=ws, auto_compact=None)
    in_window = 0
    try:
        k = 1
        while True:
            for path in ws.iterdir():
                path.unlink()
            for name, data in before.items():
                (ws / name).write_bytes(data)
            session = f"crash-{k:04}"
            outcome = crasher.run(
                op="turn",
                prompt="run it",
                model=f"scripted:{script}",
                store=url,
                workspace=str(ws),
                session=session,
                kill_at=k,
                report=str(fast_tmp / "report.json"),
            )
            assert "error" not in outcome, f"the turn failed on its own: {outcome['error']}"
            events = await logged(url, session)
            results = [e for e in events if type(e) is ev.ToolResult]
            started = [e for e in events if type(e) is ev.CaptureStarted]
            ended = [e for e in events if type(e) is ev.CaptureEnded]
            # The end goes with the result, in one append: never one without the other.
            assert len(ended) == len(results), (k, events)
            ran = (ws / "c.txt").exists()
            if started and ran and not results:
                in_window += 1
            if any(type(e) is ev.UserPrompt for e in events):
                prompt = next(e for e in events if type(e) is ev.UserPrompt)
                done = await checker.restore(session, prompt.seq)
                assert done.conflicts == [] and done.not_captured == [], (k, done)
                assert files(ws) == before, k
                closed = [e for e in await logged(url, session) if type(e) is ev.CaptureEnded]
                assert len(closed) == len(started), (k, "the capture was left open")
            else:
                assert files(ws) == before, k
            (fast_tmp / "report.json").unlink(missing_ok=True)
            if not outcome["killed"]:
                break
            k += 1
    finally:
        await checker.close()
    assert k > 1 and in_window >= 1, (k, in_window)
