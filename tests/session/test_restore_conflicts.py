"""A file a restore leaves alone (a conflict) still has a place in the session's
history: a later restore to an earlier prompt puts back that prompt's content, a
restore a crash interrupted never writes it, an undo and a fork carry nothing for it.

The first test is the sequence a random run of the restore property test found
(tests/session/test_restore_property.py, seed 103 at 400 examples).
"""

from __future__ import annotations

import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost
from agent_host.session.workspace import DiskWorkspace

from ..conftest import make_backend
from .test_restore_property import QueuedModel
from .test_restore_safety import FailingDisk


@pytest.fixture(params=["file", "sqlite", "memory"])
def backend(request, tmp_path):
    return make_backend(request.param, tmp_path)


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("untouched\n")
    return root


@pytest.fixture
async def host(ws, backend):
    model = QueuedModel()
    h = AgentHost(store=backend.open(), provider=model, workdir=ws, auto_compact=None)
    h.queue = model.queue  # type: ignore[attr-defined]
    yield h
    await h.close()


async def turn(host: AgentHost, name: str | None = None, **arguments):
    if name is not None:
        host.queue.append((name, arguments))  # type: ignore[attr-defined]
    result = await host.send(f"{name or 'look'} {arguments.get('path', '')}")
    assert result.stop_reason == "end_turn"
    return result


async def test_a_restore_past_a_conflict_puts_back_the_earlier_prompts_content(host, ws):
    first = await turn(host)  # changes nothing
    second = await turn(host, "write_file", path="a.txt", content="the agent's\n")
    (ws / "a.txt").write_text("the user's\n")
    kept = await host.restore(host.session_id, second.checkpoint)
    assert kept.conflicts == ["a.txt"] and kept.restored_files == []
    assert (ws / "a.txt").read_text() == "the user's\n"
    await turn(host, "delete_file", path="a.txt")  # the agent's change, over the user's
    back = await host.restore(host.session_id, first.checkpoint)
    # At the first prompt there was no a.txt, and the session wrote it last.
    assert back.conflicts == [] and back.restored_files == []
    assert not (ws / "a.txt").exists()
    assert sorted(p.name for p in ws.iterdir()) == ["keep.txt"]


async def test_a_conflict_is_listed_once_and_undo_leaves_it(host, ws):
    first = await turn(host, "write_file", path="a.txt", content="the agent's\n")
    await turn(host, "write_file", path="b.txt", content="b\n")
    (ws / "a.txt").write_text("the user's\n")
    restored = await host.restore(host.session_id, first.checkpoint)
    assert restored.conflicts == ["a.txt"]
    assert sorted(restored.restored_files) == ["b.txt"]
    (ws / "a.txt").write_text("the user's, later\n")
    undone = await host.undo_restore()
    assert undone.conflicts == []  # the restore never wrote a.txt: nothing to keep
    assert undone.restored_files == ["b.txt"]
    assert (ws / "a.txt").read_text() == "the user's, later\n"
    assert (ws / "b.txt").read_text() == "b\n"


async def test_an_interrupted_restore_is_finished_without_writing_its_conflicts(
    ws, backend, tmp_path
):
    model = QueuedModel()
    store = backend.open()
    host = AgentHost(store=store, provider=model, workdir=ws, auto_compact=None)
    host.queue = model.queue  # type: ignore[attr-defined]
    first = await turn(host)
    await turn(host, "write_file", path="f.txt", content="the agent's f\n")
    await turn(host, "write_file", path="g.txt", content="the agent's g\n")
    (ws / "f.txt").write_text("the user's f\n")
    (ws / "g.txt").write_text("the user's g\n")
    (ws / "keep.txt").write_text("the user's keep\n")
    await turn(host, "delete_file", path="keep.txt")  # the one file to restore
    host.workspace = FailingDisk(ws, allowed=0)
    with pytest.raises(OSError, match="No space left"):
        await host.restore(host.session_id, first.checkpoint)
    events = await store.read(host.session_id)
    restore = next(e for e in events if type(e) is ev.Restore)
    assert sorted(restore.conflicts) == ["f.txt", "g.txt"]
    assert not any(type(e) is ev.RestoreApplied for e in events)  # the crash came first
    await host.close()

    again = AgentHost(store=backend.open(), provider=QueuedModel(), workdir=ws, auto_compact=None)
    again.workspace = DiskWorkspace([ws])
    await again.resume(host.session_id)  # finishes the restore
    assert (ws / "keep.txt").read_text() == "the user's keep\n"
    assert (ws / "f.txt").read_text() == "the user's f\n"
    assert (ws / "g.txt").read_text() == "the user's g\n"
    applied = [e for e in await again.store.read(host.session_id) if type(e) is ev.RestoreApplied]
    assert [sorted(a.kept) for a in applied] == [["f.txt", "g.txt"]]
    await again.close()


async def test_a_fork_after_a_conflicted_restore_carries_no_change_for_the_conflict(host, ws):
    await turn(host)
    second = await turn(host, "write_file", path="a.txt", content="the agent's\n")
    await turn(host, "write_file", path="b.txt", content="b\n")
    (ws / "a.txt").write_text("the user's\n")
    await host.restore(host.session_id, second.checkpoint, conversation=False)
    fork = await host.fork(host.session_id)
    changes = [
        (e.path, e.after is None) for e in await host.store.read(fork) if type(e) is ev.FileSnapshot
    ]
    # The turns' own changes, and the restore's delete of b.txt; nothing for a.txt
    # beyond the agent's write, since the restore left the user's a.txt alone.
    assert changes == [("a.txt", False), ("b.txt", False), ("b.txt", True)]
