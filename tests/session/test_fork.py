"""Forking a session: the conversation up to a checkpoint or whole, the source
untouched, restores in the fork putting its files back, undo history its own."""

from __future__ import annotations

import pytest

from agent_host.session import events as ev
from agent_host.session.checkpoints import NothingToUndo
from agent_host.session.errors import CheckpointNotFound
from agent_host.session.host import AgentHost

from .test_host import THREE_TURNS, files, script


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("untouched\n")
    return root


async def three_turns(tmp_path, ws) -> tuple[AgentHost, str]:
    host = AgentHost(store="memory:", model=script(tmp_path, THREE_TURNS), workdir=ws)
    for prompt in ("create a.py", "edit a.py, add b.py", "delete a.py"):
        await host.send(prompt)
    return host, host.session_id


async def test_a_whole_fork_has_the_conversation_and_leaves_the_source(tmp_path, ws):
    host, source = await three_turns(tmp_path, ws)
    before = await host.store.read(source)
    fork = await host.fork(source)
    assert fork != source
    assert await host.history(fork) == await host.history(source)
    assert await host.store.read(source) == before  # untouched
    assert [c.prompt for c in await host.list_checkpoints(fork)] == [
        "create a.py",
        "edit a.py, add b.py",
        "delete a.py",
    ]
    started = (await host.store.read(fork))[0]
    assert type(started) is ev.SessionStarted and started.workspace == str(ws)
    with pytest.raises(NothingToUndo):
        await host.undo_restore(fork)  # the fork has no restore of its own yet
    await host.close()


async def test_a_fork_up_to_a_checkpoint_and_its_own_restores(tmp_path, ws):
    host, source = await three_turns(tmp_path, ws)
    second = (await host.list_checkpoints(source))[1].seq
    fork = await host.fork(source, second)
    assert [m["content"] for m in await host.history(fork) if m["role"] == "user"] == [
        "create a.py"
    ]
    [only] = await host.list_checkpoints(fork)
    assert only.files == ["a.py"]
    # Before its one prompt a.py did not exist, and it does not now (the source's
    # third turn deleted it): nothing to write, nothing in conflict.
    result = await host.restore(fork, only.seq)
    assert (result.restored_files, result.conflicts) == ([], [])
    assert files(ws) == {"b.py": "b\n", "keep.txt": "untouched\n"}  # b.py: not the fork's
    await host.undo_restore(fork)
    assert files(ws) == {"b.py": "b\n", "keep.txt": "untouched\n"}
    await host.close()


async def test_a_fork_after_a_restore_leaves_the_restore_out(tmp_path, ws):
    host, source = await three_turns(tmp_path, ws)
    checkpoints = await host.list_checkpoints(source)
    await host.restore(source, checkpoints[2].seq)  # a.py is back (v2)
    assert files(ws)["a.py"] == "v2\n"
    fork = await host.fork(source)
    events = await host.store.read(fork)
    kinds = {type(e) for e in events}
    assert not kinds & {ev.Restore, ev.RestoreUndone, ev.RestoreApplied}
    assert not any(e.jump for e in events if type(e) is ev.FileSnapshot)
    assert [c.prompt for c in await host.list_checkpoints(fork)] == [
        "create a.py",
        "edit a.py, add b.py",
    ]
    # The fork's first checkpoint restores what the files were before it.
    result = await host.restore(fork, (await host.list_checkpoints(fork))[0].seq)
    assert sorted(result.restored_files) == ["a.py", "b.py"]
    assert files(ws) == {"keep.txt": "untouched\n"}
    await host.close()


async def test_a_fork_keeps_a_compaction_over_the_same_events(tmp_path, ws):
    host, source = await three_turns(tmp_path, ws)
    await host.compact(session_id=source)
    fork = await host.fork(source)
    assert await host.history(fork) == await host.history(source)
    [summary] = [e for e in await host.store.read(fork) if type(e) is ev.Compaction]
    assert summary.first_seq == 1 and summary.last_seq < summary.seq
    await host.close()


async def test_a_fork_at_a_seq_that_is_no_checkpoint_is_refused(tmp_path, ws):
    host, source = await three_turns(tmp_path, ws)
    with pytest.raises(CheckpointNotFound, match="checkpoints are"):
        await host.fork(source, 3)
    assert [i.id for i in await host.list_sessions()] == [source]
    await host.close()
