"""Restore and undo refuse what they cannot do whole, finish what a failure
interrupted, and never write over what someone else changed meanwhile."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.session import events as ev
from agent_host.session.errors import (
    CheckpointNotFound,
    PathOutsideWorkspace,
    SnapshotUnavailable,
    ToolError,
    TurnInProgress,
    UndoUnavailable,
)
from agent_host.session.host import AgentHost
from agent_host.session.workspace import DiskWorkspace

from ..conftest import make_backend
from . import file_blob_tamper
from .test_host import THREE_TURNS, files, run_three_turns, script
from .test_workspace_race import _FLIPPER, _contents, _exchange_supported

DURABLE = ["file", "sqlite"]


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("untouched\n")
    return root


@pytest.fixture(params=["file", "sqlite", "memory"])
def backend(request, tmp_path):
    return make_backend(request.param, tmp_path)


@pytest.fixture
async def host(tmp_path, ws, backend):
    h = AgentHost(
        store=backend.open(), model=script(tmp_path, THREE_TURNS), workdir=ws, auto_compact=None
    )
    yield h
    await h.close()


def damage_blob(host: AgentHost, blob: str, backend: str) -> None:
    """Change one byte of a stored blob behind the store's back."""
    store = host.store
    if backend == "file":
        data = bytearray(file_blob_tamper.stored_bytes(store.blobs, blob))
        data[0] ^= 0x01
        file_blob_tamper.overwrite(store.blobs, blob, bytes(data))
    elif backend == "sqlite":
        store._conn.execute(
            "UPDATE blobs SET data = CAST(x'00' || data AS BLOB) WHERE id = ?", (blob,)
        )
    else:
        data, at = store.blobs._blobs[blob]
        store.blobs._blobs[blob] = (b"!" + data, at)


def drop_blob(host: AgentHost, blob: str, backend: str) -> None:
    store = host.store
    if backend == "file":
        file_blob_tamper.remove(store.blobs, blob)
    elif backend == "sqlite":
        store._conn.execute("DELETE FROM blobs WHERE id = ?", (blob,))
    else:
        del store.blobs._blobs[blob]


def snapshot_of(events, path: str) -> ev.FileSnapshot:
    return next(e for e in events if type(e) is ev.FileSnapshot and e.path == path)


@pytest.mark.parametrize("harm", [damage_blob, drop_blob])
async def test_a_restore_needing_a_missing_or_damaged_snapshot_changes_nothing(
    host, ws, backend, harm
):
    results = await run_three_turns(host)
    events = await host.store.read(host.session_id)
    # Restoring to before turn 2 needs a.py's content after turn 1 ("v1").
    harm(host, snapshot_of(events[results[1].checkpoint :], "a.py").before, backend.name)
    before = files(ws)
    with pytest.raises(SnapshotUnavailable, match=r"a\.py \(blob [0-9a-f]{12}, (missing|damaged)"):
        await host.restore(host.session_id, results[1].checkpoint)
    assert files(ws) == before
    assert await host.store.read(host.session_id) == events  # nothing recorded
    # The conversation alone needs no snapshot.
    done = await host.restore(host.session_id, results[1].checkpoint, files=False)
    assert done.removed_events > 0 and files(ws) == before


async def test_an_undo_needing_a_damaged_snapshot_changes_nothing(host, ws, backend):
    results = await run_three_turns(host)
    after_all = files(ws)
    await host.restore(host.session_id, results[0].checkpoint)
    restored = files(ws)
    events = await host.store.read(host.session_id)
    # The undo writes b.py back: its content after turn 2.
    damage_blob(host, snapshot_of(events, "b.py").after, backend.name)
    with pytest.raises(SnapshotUnavailable, match=r"b\.py .*damaged"):
        await host.undo_restore()
    assert files(ws) == restored
    assert await host.store.read(host.session_id) == events
    assert after_all != restored


class FailingDisk(DiskWorkspace):
    """Writes fail (as on a full disk) after ``allowed`` of them succeeded."""

    def __init__(self, root: Path, allowed: int) -> None:
        super().__init__([root])
        self.allowed = allowed

    async def write_bytes(self, path, data, **options):
        if self.allowed <= 0:
            raise OSError(28, "No space left on device", path)
        self.allowed -= 1
        await super().write_bytes(path, data, **options)


@pytest.mark.parametrize("then", ["send", "restore", "undo_restore", "compact", "resume"])
async def test_a_restore_that_failed_midway_is_finished_by_the_next_operation(
    tmp_path, ws, backend, then
):
    steps = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": f"f{i}.txt", "content": "x\n"}}
                for i in range(4)
            ]
        },
        {"text": "wrote four"},
        {"text": "again"},
        {"text": "a summary"},
    ]
    for i in range(4):
        (ws / f"f{i}.txt").write_text("original\n")
    model = script(tmp_path, steps)
    store = backend.open()
    host = AgentHost(store=store, model=model, workdir=ws, auto_compact=None)
    first = await host.send("write four files")
    await host.send("and again")
    host.workspace = FailingDisk(ws, allowed=2)
    with pytest.raises(OSError, match="No space left"):
        await host.restore(host.session_id, first.checkpoint)
    assert sorted(files(ws).values()).count("original\n") == 2  # half written ...
    host.workspace = DiskWorkspace([ws])  # ... until the disk has room again
    if then == "send":
        # Gets the files finished before its turn (which replays the first step).
        await host.send("after the restore")
    elif then == "restore":
        # Finishes the files, then refuses a checkpoint the restore took away.
        with pytest.raises(CheckpointNotFound):
            await host.restore(host.session_id, first.checkpoint + 100)
    elif then == "undo_restore":
        await host.undo_restore()
    elif then == "compact":
        await host.compact()
    else:
        await host.resume(host.session_id)
    want = "x\n" if then in ("undo_restore", "send") else "original\n"
    assert {p: t for p, t in files(ws).items() if p.startswith("f")} == {
        f"f{i}.txt": want for i in range(4)
    }
    events = await store.read(host.session_id)
    applied = [e for e in events if type(e) is ev.RestoreApplied]
    assert applied and applied[0].kept == []
    restore = next(e for e in events if type(e) is ev.Restore)
    # Finished before anything else was logged: right after the restore's jumps.
    assert applied[0].seq == restore.seq + 5 and applied[0].intent_seq == restore.seq
    await host.close()


async def test_a_file_changed_during_an_interrupted_restore_is_kept(tmp_path, ws, backend):
    (ws / "a.txt").write_text("original\n")
    (ws / "b.txt").write_text("original\n")
    steps = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "a.txt", "content": "agent\n"}},
                {"name": "write_file", "arguments": {"path": "b.txt", "content": "agent\n"}},
            ]
        },
        {"text": "done"},
    ]
    store = backend.open()
    host = AgentHost(store=store, model=script(tmp_path, steps), workdir=ws, auto_compact=None)
    first = await host.send("write two")
    host.workspace = FailingDisk(ws, allowed=0)
    with pytest.raises(OSError):
        await host.restore(host.session_id, first.checkpoint)
    (ws / "b.txt").write_text("the user's own edit\n")  # before the restore is finished
    host.workspace = DiskWorkspace([ws])
    await host.resume(host.session_id)
    assert (ws / "a.txt").read_text() == "original\n"
    assert (ws / "b.txt").read_text() == "the user's own edit\n"
    applied = [e for e in await store.read(host.session_id) if type(e) is ev.RestoreApplied]
    assert applied[-1].kept == ["b.txt"]
    # Its undo leaves b.txt alone too: the restore never wrote it.
    undone = await host.undo_restore()
    assert undone.conflicts == ["b.txt"]
    assert (ws / "a.txt").read_text() == "agent\n"
    assert (ws / "b.txt").read_text() == "the user's own edit\n"
    await host.close()


async def test_undo_keeps_a_file_changed_since_the_restore(host, ws):
    results = await run_three_turns(host)
    await host.restore(host.session_id, results[1].checkpoint)  # a.py back to "v1"
    (ws / "a.py").write_text("the user's work after the restore\n")
    undone = await host.undo_restore()
    assert undone.conflicts == ["a.py"]
    assert (ws / "a.py").read_text() == "the user's work after the restore\n"
    assert "b.py" in undone.restored_files and (ws / "b.py").read_text() == "b\n"


async def test_a_restore_keeps_every_event_in_the_log(host, ws):
    """Nothing acknowledged is ever lost: a restore hides, it does not cut."""
    await run_three_turns(host)
    logged = await host.store.read(host.session_id)
    await host.restore(host.session_id, 2)
    assert (await host.store.read(host.session_id))[: len(logged)] == logged
    assert await host.store.truncations(host.session_id) == []
    assert [c.seq for c in await host.list_checkpoints()] == []
    (info,) = await host.store.list()
    assert info.turns == 0
    await host.undo_restore()
    (info,) = await host.store.list()
    assert info.turns == 3
    assert [c.prompt for c in await host.list_checkpoints()] == [
        "create a.py",
        "edit a.py, add b.py",
        "delete a.py",
    ]


async def test_a_restore_made_by_0_1_whose_stash_is_gone_says_so(host, backend):
    """agent-host 0.1 cut the log on restore and kept the cut in a truncation."""
    await run_three_turns(host)
    await host.store.truncate(host.session_id, 1)
    await host.store.append(host.session_id, [ev.Restore(to_seq=1, truncation=7)])
    with pytest.raises(UndoUnavailable, match="truncation 7"):
        await host.undo_restore()


@pytest.mark.parametrize("name", DURABLE)
async def test_delete_waits_for_a_turn_in_another_process(tmp_path, ws, name):
    backend = make_backend(name, tmp_path)
    steps = [{"text": "slowly", "delay_ms": 2000}]
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import asyncio, sys\n"
        "from agent_host.session.host import AgentHost\n"
        "async def main():\n"
        f"    h = AgentHost(store={backend.url!r}, model={script(tmp_path, steps)!r},"
        f" workdir={str(ws)!r}, session_id='busy')\n"
        "    await h.send('take your time')\n"
        "    await h.close()\n"
        "asyncio.run(main())\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(runner), cwd=Path(__file__).resolve().parents[2]
    )
    host = AgentHost(store=backend.open(), workdir=ws)
    try:
        for _ in range(200):  # until the other process's turn has begun
            if await host.store.read("busy"):
                break
            await asyncio.sleep(0.02)
        with pytest.raises(TurnInProgress, match="another process"):
            await host.delete_session("busy")
        assert await proc.wait() == 0
        assert [type(e) for e in await host.store.read("busy")][-1] is ev.TurnEnd
        await host.delete_session("busy")  # once it is over
        assert await host.store.read("busy") == []
    finally:
        if proc.returncode is None:
            proc.kill()
        await host.close()


@pytest.mark.slow
async def test_a_folder_flipped_to_a_symlink_during_restores_never_lets_one_write_outside(
    tmp_path,
):
    if not _exchange_supported(tmp_path):
        pytest.skip("needs renameat2(RENAME_EXCHANGE) to swap a folder and a symlink")
    ws = (tmp_path / "ws").resolve()
    (ws / "sub").mkdir(parents=True)
    (ws / "sub.swap").symlink_to("../outside")
    outside = tmp_path / "outside"
    outside.mkdir()
    names = [f"f{i}.txt" for i in range(10)]
    for name in names:
        (outside / name).write_bytes(b"OUTSIDE")
        (ws / "sub" / name).write_text("original\n")
    steps = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": f"sub/{n}", "content": "agent\n"}}
                for n in names
            ]
        },
        {"text": "done"},
    ]
    host = AgentHost(
        store=tmp_path / "store", model=script(tmp_path, steps), workdir=ws, auto_compact=None
    )
    first = await host.send("write ten")
    outside_before = _contents(outside)
    flipper = subprocess.Popen([sys.executable, "-c", _FLIPPER, str(ws)])
    refused = 0
    try:
        for _ in range(40):
            try:
                try:
                    await host.undo_restore()
                except Exception as exc:  # noqa: BLE001 - NothingToUndo: restore instead
                    if type(exc).__name__ != "NothingToUndo":
                        raise
                    await host.restore(host.session_id, first.checkpoint)
            except (OSError, ToolError, PathOutsideWorkspace, CheckpointNotFound):
                refused += 1  # cut off by the flip: the next call finishes it first
    finally:
        (ws / "stop").touch()
        flipper.wait(timeout=30)
        (ws / "stop").unlink()
    assert refused > 0, "the flip never hit a restore: the test tested nothing"
    assert _contents(outside) == outside_before
    assert not list(outside.iterdir()) or sorted(p.name for p in outside.iterdir()) == names
    await host.resume(host.session_id)  # finishes whatever the last flip cut off
    events = await host.store.read(host.session_id)
    assert type(events[-1]) is not ev.FileSnapshot  # no intent left unfinished
    for name in names:
        assert (ws / "sub" / name).read_text() in ("original\n", "agent\n")
    await host.close()


async def test_a_file_the_user_changed_after_the_turn_is_a_conflict_until_forced(host, ws):
    results = await run_three_turns(host)
    (ws / "b.py").write_text("the user's b\n")  # after the agent's last write of it
    kept = await host.restore(host.session_id, results[1].checkpoint)
    assert kept.conflicts == ["b.py"]
    assert (ws / "b.py").read_text() == "the user's b\n"
    assert (ws / "a.py").read_text() == "v1\n"  # the rest was restored
    await host.undo_restore()
    assert (ws / "b.py").read_text() == "the user's b\n"
    forced = await host.restore(host.session_id, results[1].checkpoint, force=True)
    assert "b.py" in forced.restored_files and forced.conflicts == []
    assert not (ws / "b.py").exists()
    await host.undo_restore()  # the user's content was kept for the undo
    assert (ws / "b.py").read_text() == "the user's b\n"


async def test_a_user_edit_the_agent_then_overwrote_is_no_conflict(host, ws):
    (ws / "a.py").write_text("the user's a\n")  # before the turns: the agent's to change
    results = await run_three_turns(host)
    restored = await host.restore(host.session_id, results[0].checkpoint)
    assert restored.conflicts == []
    assert (ws / "a.py").read_text() == "the user's a\n"
