"""A fork from another window while a restore writes the workspace: the fork only
reads the source, and nothing it does takes a file the restore is writing."""

from __future__ import annotations

import asyncio
import json
import os
import threading

import pytest

from agent_host.session.host import AgentHost
from agent_host.session.workspace import DiskWorkspace

from .test_restore_crash import Crasher, files, store_url

pytestmark = pytest.mark.slow

FILES = [f"f{i:03}.txt" for i in range(300)]


async def make_session(backend: str, base) -> tuple[str, str, int]:
    """A session whose one turn rewrote 300 files: its id, store URL and checkpoint."""
    ws = base / "ws"
    ws.mkdir()
    for path in FILES:
        (ws / path).write_text(f"{path}: the user's\n" * 40)
    calls = [
        {"name": "write_file", "arguments": {"path": p, "content": f"{p}: the agent's\n" * 50}}
        for p in FILES
    ]
    script = base / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    url = store_url(backend, base)
    host = AgentHost(store=url, model=f"scripted:{script}", workdir=ws, auto_compact=None)
    result = await host.send("rewrite 300 files")
    assert result.stop_reason == "end_turn"
    await host.close()
    return host.session_id, url, result.checkpoint


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_forks_in_another_process_never_break_a_running_restore(tmp_path, backend):
    session, url, checkpoint = await make_session(backend, tmp_path)
    ws = tmp_path / "ws"
    after_turn = files(ws)
    restorer, forker = Crasher(), Crasher()
    done = threading.Event()
    forks: list[dict] = []

    def fork_until_done() -> None:
        while not done.is_set():
            forks.append(
                forker.run(
                    op="fork",
                    store=url,
                    workspace=str(ws),
                    session=session,
                    kill_at=0,
                    report=str(tmp_path / "fork.json"),
                )
            )

    thread = threading.Thread(target=fork_until_done)
    thread.start()
    outcomes = []
    try:
        for op in ("restore", "undo") * 3:
            outcome = restorer.run(
                op=op,
                store=url,
                workspace=str(ws),
                session=session,
                seq=checkpoint,
                kill_at=0,
                report=str(tmp_path / "restore.json"),
            )
            outcomes.append((op, outcome, files(ws)))
    finally:
        done.set()
        thread.join(timeout=120)
        restorer.close()
        forker.close()
    for op, outcome, now in outcomes:
        assert "error" not in outcome, f"{op} failed beside the forks: {outcome['error']}"
        assert outcome["result"] == {"restored": 300, "conflicts": []}, (op, outcome)
        if op == "undo":
            assert now == after_turn
        else:
            assert set(now) == set(FILES)  # no stray temp file either
            assert all(now[p] == f"{p}: the user's\n".encode() * 40 for p in FILES)
    assert len(forks) >= 3, "the forks did not overlap the restores"
    assert all("error" not in f for f in forks), [f["error"] for f in forks if "error" in f]


async def test_a_sweep_leaves_the_temp_file_of_a_write_in_flight(tmp_path, monkeypatch):
    """Another session's finisher sweeping a.txt's strays while a.txt is written
    (two sessions, one folder): the write in flight keeps its temp file."""
    from agent_host.session.workspace import dirfd

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".a.txt.0123456789ab.tmp").write_text("what a write that died left\n")
    writing, swept = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def fsync_then_wait(fd: int) -> None:
        real_fsync(fd)
        if not writing.is_set():  # the temp file's own sync: the write is mid-way
            writing.set()
            assert swept.wait(30)

    monkeypatch.setattr(dirfd.os, "fsync", fsync_then_wait)
    writer, sweeper = DiskWorkspace([ws]), DiskWorkspace([ws])
    write = asyncio.ensure_future(writer.write_bytes("a.txt", b"new\n"))
    assert await asyncio.to_thread(writing.wait, 30)
    await sweeper.discard_partial_writes("a.txt")
    swept.set()
    await write
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt"]
    assert (ws / "a.txt").read_bytes() == b"new\n"
