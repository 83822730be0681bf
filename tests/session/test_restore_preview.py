"""A restore's preview is the restore's own decision: a preview followed by the
restore, with the same paths and force, writes exactly what the preview said and
nothing else -- over every choice of paths, with a user-edited file (a conflict
with the user's change shown), a created file (deleted), a deleted file
(recreated) and a binary file. And reverting one turn's files: only those files,
the conversation kept, undoable."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from agent_host.session.errors import InvalidArgument
from agent_host.session.host import AgentHost
from agent_host.session.restore import RestoreResult
from agent_host.session.restore_plan import RestorePreview

from ..conftest import make_backend
from .test_changes import command
from .test_host import call, script

ORIGINAL_BIN = b"\x00\x01\x02"
STEPS = [
    {
        "tool_calls": [
            call("edit_file", path="mod.txt", old_string="two", new_string="TWO"),
            call("write_file", path="new.txt", content="fresh\n"),
            call("delete_file", path="gone.txt"),
        ]
    },
    {"text": "edited"},
    command("printf 'x\\0y' > blob.bin && echo more >> new.txt"),
    {"text": "binary"},
    {"tool_calls": [call("write_file", path="late.txt", content="late\n")]},
    {"text": "late"},
]


def disk(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "mod.txt").write_text("one\ntwo\nthree\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "blob.bin").write_bytes(ORIGINAL_BIN)
    (root / "keep.txt").write_text("untouched\n")
    return root


@pytest.fixture(params=["sqlite", "file"])
async def host(request, tmp_path, ws):
    store = make_backend(request.param, tmp_path).open()
    h = AgentHost(store=store, model=script(tmp_path, STEPS), workdir=ws, auto_compact=None)
    yield h
    await h.close()


def check_written_as_previewed(
    preview: RestorePreview, result: RestoreResult, before: dict, after: dict, force: bool
):
    shown = {f.path: f for f in preview.files}
    written = {p for p, f in shown.items() if force or not f.conflict}
    assert sorted(result.restored_files) == sorted(written)
    assert sorted(result.conflicts) == sorted(set(shown) - written)
    for path in set(before) | set(after):
        if path not in written:
            assert after.get(path) == before.get(path), path  # left as it was
            continue
        f = shown[path]
        assert before.get(path) == (None if f.before is None else f.before.encode()) or f.binary
        if f.action == "deleted":
            assert path not in after
        elif f.binary:
            assert after[path] == ORIGINAL_BIN
        else:
            assert after[path] == f.after.encode()


async def test_a_preview_then_the_restore_writes_what_the_preview_said(host, ws):
    first = await host.send("edit")
    await host.send("shell")
    await host.send("late")
    (ws / "mod.txt").write_text("one\nTWO\nthree\nthe user's line\n")
    handle = host.handle()
    changed = ["mod.txt", "new.txt", "gone.txt", "blob.bin", "late.txt"]
    choices = [None] + [list(c) for n in (1, 2, 3) for c in itertools.combinations(changed, n)]
    whole = {f.path: f for f in (await handle.preview_restore(first.checkpoint)).files}
    assert sorted(whole) == sorted(changed)
    mod = whole["mod.txt"]
    assert mod.conflict and mod.agent_text == "one\nTWO\nthree\n"
    assert mod.user_diff is not None and "+the user's line\n" in mod.user_diff
    assert mod.after == "one\ntwo\nthree\n" and "-the user's line\n" in mod.diff
    assert (whole["new.txt"].action, whole["new.txt"].conflict) == ("deleted", False)
    assert (whole["gone.txt"].action, whole["gone.txt"].after) == ("added", "bye\n")
    assert whole["blob.bin"].binary and whole["blob.bin"].diff == ""
    assert whole["new.txt"].source == "mixed" and whole["blob.bin"].source == "command"
    assert not any(f.conflict for p, f in whole.items() if p != "mod.txt")
    # Unforced first: a forced restore's undo writes the user's text back, which
    # makes it the session's own (no conflict) from then on.
    conflicts_seen = 0
    for force, paths in itertools.product((False, True), choices):
        before = disk(ws)
        preview = await handle.preview_restore(first.checkpoint, paths=paths)
        assert disk(ws) == before  # nothing written
        assert preview.messages_removed == 6 and preview.checkpoint.ordinal == 1
        result = await handle.restore(first.checkpoint, force=force, paths=paths)
        after = disk(ws)
        check_written_as_previewed(preview, result, before, after, force)
        conflicts_seen += any(f.conflict for f in preview.files)
        await handle.undo_restore(force=True)
        assert disk(ws) == before, (paths, force)
        assert len(await host.list_checkpoints()) == 3
    assert conflicts_seen >= sum(1 for c in choices if c is None or "mod.txt" in c)


async def test_paths_the_session_did_not_change_are_refused_by_name(host, ws):
    first = await host.send("edit")
    before = disk(ws)
    with pytest.raises(InvalidArgument, match="keep.txt"):
        await host.handle().restore(first.checkpoint, paths=["keep.txt", "mod.txt"])
    assert disk(ws) == before
    assert len(await host.list_checkpoints()) == 1


async def test_reverting_one_file_of_a_turn_leaves_the_others_and_the_conversation(host, ws):
    await host.send("edit")
    second = await host.send("shell")
    handle = host.handle()
    before = disk(ws)
    dry = await handle.revert_files(second.checkpoint, ["new.txt"], dry_run=True)
    assert isinstance(dry, RestorePreview) and dry.messages_removed == 0
    (f,) = dry.files
    assert (f.path, f.before, f.after, f.conflict) == ("new.txt", "fresh\nmore\n", "fresh\n", False)
    assert disk(ws) == before
    done = await handle.revert_files(second.checkpoint, ["new.txt"])
    assert isinstance(done, RestoreResult) and done.restored_files == ["new.txt"]
    assert (ws / "new.txt").read_text() == "fresh\n"  # as before that turn, not the first
    assert disk(ws) == {**before, "new.txt": b"fresh\n"}  # blob.bin still the turn's
    assert [cp.seq for cp in await host.list_checkpoints()][-1] == second.checkpoint
    await handle.undo_restore()
    assert disk(ws) == before


async def test_reverting_a_file_the_user_changed_keeps_it_unless_forced(host, ws):
    first = await host.send("edit")
    (ws / "new.txt").write_text("the user's\n")
    kept = await host.handle().revert_files(first.checkpoint, ["new.txt", "mod.txt"])
    assert isinstance(kept, RestoreResult)
    assert kept.conflicts == ["new.txt"] and kept.restored_files == ["mod.txt"]
    assert (ws / "new.txt").read_text() == "the user's\n"
    assert (ws / "mod.txt").read_text() == "one\ntwo\nthree\n"
    forced = await host.handle().revert_files(first.checkpoint, ["new.txt"], force=True)
    assert isinstance(forced, RestoreResult) and forced.restored_files == ["new.txt"]
    assert not (ws / "new.txt").exists()
    await host.handle().undo_restore()
    assert (ws / "new.txt").read_text() == "the user's\n"
