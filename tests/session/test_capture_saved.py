"""The index copy a CaptureStarted names: whole, or a delta on the last whole copy,
and either read back as the index it was saved from -- also after gc, and said as
not captured when the whole copy a delta needs is gone."""

from __future__ import annotations

import pytest

from agent_host.session import capture_saved
from agent_host.session import events as ev
from agent_host.session.blobs import MemoryBlobStore
from agent_host.session.capture import WorkspaceIndex
from agent_host.session.capture_saved import SavedDelta, SavedIndex, decode
from agent_host.session.host import AgentHost

from ..conftest import make_backend
from . import file_blob_tamper
from .test_capture import sh, tree


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    tree(
        root,
        {
            "a.py": "a = 1\n",
            "b.txt": "bee\n",
            "src/m.py": "x = 1\n",
            "src/deep/n.py": "n = 1\n",
            "node_modules/dep.js": "dep\n",
            ".gitignore": "*.log\n",
        },
    )
    return root.resolve()


async def copy_of(blobs, blob: str) -> SavedIndex | SavedDelta:
    return decode(await blobs.get(blob))


def as_saved(index: WorkspaceIndex) -> tuple:
    return (index._files, index._folders, index._racy | index._stale)


async def watching_index(ws, blobs) -> WorkspaceIndex:
    index = WorkspaceIndex([ws], blobs)
    await index.refresh()
    if not index.watching:
        await index.close()
        pytest.skip("no inotify here: every pass walks, and every copy is whole")
    return index


async def test_a_copy_after_watched_passes_is_a_delta_that_loads_as_the_index(ws):
    blobs = MemoryBlobStore()
    index = await watching_index(ws, blobs)
    try:
        whole = await index.save()
        assert isinstance(await copy_of(blobs, whole), SavedIndex)
        # Changed, removed, new in a new folder, a folder gone, an ignored folder's entry.
        sh(ws, "echo a2 >> a.py && rm b.txt && mkdir -p new/sub && echo c > new/sub/c.py")
        sh(ws, "rm -r src/deep && echo x > node_modules/other.js && echo l > x.log")
        await index.refresh()
        saved = await index.save()
        delta = await copy_of(blobs, saved)
        assert isinstance(delta, SavedDelta) and delta.base == whole
        assert {"a.py", "b.txt", "new/sub/c.py", "src/deep/n.py"} <= set(delta.files)
        assert delta.files["b.txt"] is None and delta.files["src/deep/n.py"] is None
        assert len(delta.files) < 10  # what changed, not the workspace
        loaded = await WorkspaceIndex.load_saved(saved, blobs)
        assert as_saved(loaded) == as_saved(index)
        # Saved again unchanged: the same copy; a later one is a delta on the same base.
        assert await index.save() == saved
        sh(ws, "echo m2 >> src/m.py")
        await index.refresh()
        later = await index.save()
        assert (await copy_of(blobs, later)).base == whole
        assert as_saved(await WorkspaceIndex.load_saved(later, blobs)) == as_saved(index)
        # What the loaded index finds against the disk is what the live one finds.
        sh(ws, "echo a3 >> a.py && rm new/sub/c.py")
        theirs = await (await WorkspaceIndex.load_saved(later, blobs)).changes()
        ours = await index.changes()
        assert theirs == ours and [c.path for c in ours.changes] == ["a.py", "new/sub/c.py"]
    finally:
        await index.close()


async def test_a_walk_or_a_delta_past_its_limit_makes_the_next_copy_whole(ws, monkeypatch):
    blobs = MemoryBlobStore()
    index = await watching_index(ws, blobs)
    try:
        await index.save()
        sh(ws, "echo a2 >> a.py")
        index.verify_next()  # the next pass walks: the copy after it is whole
        await index.refresh()
        assert index.walks == 2
        walked = await index.save()
        assert isinstance(await copy_of(blobs, walked), SavedIndex)
        sh(ws, "echo a3 >> a.py")
        await index.refresh()
        assert (await copy_of(blobs, await index.save())).base == walked
        monkeypatch.setattr(capture_saved, "rebase_at", lambda entries: 2)
        sh(ws, "echo b2 >> b.txt && echo m2 >> src/m.py")
        await index.refresh()
        rebased = await index.save()
        assert isinstance(await copy_of(blobs, rebased), SavedIndex)
        assert as_saved(await WorkspaceIndex.load_saved(rebased, blobs)) == as_saved(index)
    finally:
        await index.close()


def test_rebase_at_grows_as_the_square_root_of_the_index():
    assert capture_saved.rebase_at(10) == 256
    assert capture_saved.rebase_at(100_000) == 1414
    assert capture_saved.rebase_at(10_000_000) == 14_142


async def test_a_capture_cut_off_at_a_delta_is_finished_after_gc(tmp_path, ws):
    """The delta and the whole copy it names are kept by gc while the capture is
    pending (the index that pinned them is gone): the changes are still logged."""
    from agent_host.session.store import collect_garbage

    store = make_backend("file", tmp_path).open()
    index = await watching_index(ws, store.blobs)
    await index.save()
    sh(ws, "echo users > b.txt")
    await index.refresh()
    saved = await index.save()
    delta = await copy_of(store.blobs, saved)
    assert isinstance(delta, SavedDelta)
    await index.close()  # a crash: its pins go with it
    opening = [
        ev.SessionStarted(workspace=str(ws)),
        ev.UserPrompt(text="run it"),
        ev.CaptureStarted(index=saved),
    ]
    await store.append("cut-off", opening, expected_head=0)
    sh(ws, "echo a = 2 > a.py && rm src/m.py")  # what the command did before the crash
    await collect_garbage(store, grace_seconds=-1)
    assert await store.blobs.exists(delta.base)
    host = AgentHost(store=store, workdir=ws, auto_compact=None)
    try:
        (checkpoint,) = await host.list_checkpoints("cut-off")
        assert sorted(checkpoint.files) == ["a.py", "src/m.py"]
        done = await host.restore("cut-off", checkpoint.seq)
        assert done.not_captured == []
        assert (ws / "a.py").read_text() == "a = 1\n" and (ws / "src/m.py").read_text() == "x = 1\n"
        assert (ws / "b.txt").read_text() == "users\n"
    finally:
        await host.close()
        await store.close()


async def test_a_delta_whose_whole_copy_is_gone_is_logged_as_not_captured(tmp_path, ws):
    store = make_backend("file", tmp_path).open()
    index = await watching_index(ws, store.blobs)
    await index.save()
    sh(ws, "echo b2 >> b.txt")
    await index.refresh()
    saved = await index.save()
    delta = await copy_of(store.blobs, saved)
    assert isinstance(delta, SavedDelta)
    await index.close()
    file_blob_tamper.remove(store.blobs, delta.base)  # damage: the whole copy is lost
    opening = [
        ev.SessionStarted(workspace=str(ws)),
        ev.UserPrompt(text="run it"),
        ev.CaptureStarted(index=saved),
    ]
    await store.append("cut-off", opening, expected_head=0)
    sh(ws, "echo a = 2 > a.py")
    host = AgentHost(store=store, workdir=ws, auto_compact=None)
    try:
        (checkpoint,) = await host.list_checkpoints("cut-off")
        assert checkpoint.files == [] and checkpoint.not_captured == ["./"]
    finally:
        await host.close()
        await store.close()


def test_a_copy_that_is_neither_whole_nor_a_delta_is_refused():
    for data in (b"[]", b'{"v": 3}', b'{"v": 2, "base": 7}', b'{"v": 2, "base": "x"}'):
        with pytest.raises(ValueError):
            decode(data)


async def test_a_racy_file_read_again_unchanged_is_not_stored_again(ws, tmp_path):
    """A file changed just before a pass is read again by the next walk (its stat may
    hide a change); when its content is the blob the index holds, nothing is stored."""
    from .test_capture import _Recording, racy

    recording = _Recording(MemoryBlobStore())
    index = WorkspaceIndex([ws], recording, watch=False)
    try:
        await index.refresh()
        sh(ws, "echo a2 >> a.py")
        got = await index.changes()
        assert [c.path for c in got.changes] == ["a.py"] and "a.py" in racy(index)
        stored = len(recording.batches)
        assert (await index.changes()).changes == []
        assert len(recording.batches) == stored and "a.py" in racy(index)
        sh(ws, "echo a3 >> a.py")  # a change while racy is still stored and reported
        (change,) = (await index.changes()).changes
        assert change.path == "a.py" and len(recording.batches) == stored + 1
        assert (await recording.get(change.after)) == (ws / "a.py").read_bytes()
    finally:
        await index.close()


async def test_a_folder_that_cannot_be_listed_makes_passes_walk_until_it_can(ws, monkeypatch):
    """Kept as passes go (not found by a look at every folder): an ignored folder
    a watched pass could not list makes the next pass walk; once listed, passes
    drain again."""
    from agent_host.session import capture_watch

    index = await watching_index(ws, MemoryBlobStore())
    try:
        real = capture_watch.sign_folder
        monkeypatch.setattr(capture_watch, "sign_folder", lambda path: ("unlisted 13", False))
        sh(ws, "echo x > node_modules/other.js")
        got = await index.changes()
        assert got.not_captured == ["node_modules/"] and index.walks == 1
        monkeypatch.setattr(capture_watch, "sign_folder", real)
        await index.refresh()
        assert index.walks == 2  # the folder could not be listed: this pass walked
        sh(ws, "echo a2 >> a.py")
        assert [c.path for c in (await index.changes()).changes] == ["a.py"]
        assert index.walks == 2  # listed again by that walk: drained since
    finally:
        await index.close()
