"""The index copy a pass stores with its contents: a command's changes() stores the
delta the next save() would, in its own put, so that a begin whose workspace was not
touched since stores nothing -- and that copy, loaded to finish a cut-off capture,
misses nothing the live index would find."""

from __future__ import annotations

import asyncio
import os

import pytest

from agent_host.session import capture, capture_read
from agent_host.session.blobs import MemoryBlobStore
from agent_host.session.capture import WorkspaceIndex
from agent_host.session.capture_saved import SavedDelta, after_pass, decode
from agent_host.session.errors import StoreUnavailable

from .test_capture import racy, sh, tree
from .test_capture_saved import watching_index


class Counting:
    """A blob store that notes the ids each put_many stored, and can be made to fail
    (after storing, as a store whose sync failed) or to wait until let go."""

    def __init__(self) -> None:
        self.inner = MemoryBlobStore()
        self.puts: list[list[str]] = []
        self.fail: Exception | None = None
        self.fail_first = False
        """Fail before storing (else after)."""
        self.entered = asyncio.Event()
        self.go = asyncio.Event()
        self.go.set()

    async def put_many(self, datas, pin=None):
        self.entered.set()
        await self.go.wait()
        if self.fail is not None and self.fail_first:
            raise self.fail
        ids = await self.inner.put_many(datas, pin)
        if self.fail is not None:
            raise self.fail
        self.puts.append(ids)
        return ids

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    tree(root, {"a.py": "a = 1\n", "b.txt": "bee\n", "src/m.py": "x = 1\n", "c.py": "c\n"})
    return root.resolve()


async def begin(index: WorkspaceIndex) -> str:
    """capture_log.begin's part: refresh, then the copy CaptureStarted names."""
    await index.refresh()
    return await index.save()


def same_files(loaded: WorkspaceIndex, live: WorkspaceIndex) -> None:
    """The copy holds the live index's files and folders; it may name more racy
    files (read again: nothing missed), never fewer."""
    assert loaded._files == live._files and loaded._folders == live._folders
    assert racy(live) | live._stale <= racy(loaded)


async def test_a_begin_after_an_untouched_gap_stores_nothing(ws):
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        await begin(index)  # the whole copy
        sh(ws, "echo a2 >> a.py && echo new > n.py")
        got = await index.changes()
        assert [c.path for c in got.changes] == ["a.py", "n.py"]
        *contents, copy = blobs.puts[-1]  # one put: the two contents and the copy
        assert len(blobs.puts[-1]) == 3 and isinstance(decode(await blobs.get(copy)), SavedDelta)
        puts = len(blobs.puts)
        # Next begin: the two files are racy (smudged), not read again: nothing stored.
        assert {"a.py", "n.py"} <= racy(index)
        assert await begin(index) == copy and len(blobs.puts) == puts
        loaded = await WorkspaceIndex.load_saved(copy, blobs)
        same_files(loaded, index)
        # What the next command changes, the loaded copy finds as the live index does.
        sh(ws, "echo a3 >> a.py && rm b.txt && echo m2 >> src/m.py")
        theirs, ours = await loaded.changes(), await index.changes()
        assert theirs == ours
        assert [c.path for c in ours.changes] == ["a.py", "b.txt", "src/m.py"]
        await loaded.close()
    finally:
        await index.close()


async def test_a_user_edit_between_commands_is_in_the_copy_the_refresh_stored(ws):
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        await begin(index)
        sh(ws, "echo a2 >> a.py")
        await index.changes()
        sh(ws, "echo users > c.py")  # between commands
        await index.refresh()
        puts = len(blobs.puts)
        saved = await index.save()
        assert len(blobs.puts) == puts and saved == blobs.puts[-1][-1]  # the refresh's put
        loaded = await WorkspaceIndex.load_saved(saved, blobs)
        same_files(loaded, index)
        sh(ws, "echo cmd >> c.py && echo a3 >> a.py")
        theirs, ours = await loaded.changes(), await index.changes()
        assert theirs == ours and [c.path for c in ours.changes] == ["a.py", "c.py"]
        (change,) = [c for c in theirs.changes if c.path == "c.py"]
        assert await blobs.get(change.before) == b"users\n"  # the user's, not the old
        await loaded.close()
    finally:
        await index.close()


async def test_a_racy_rewrite_keeping_the_stat_is_found_from_the_copy(ws):
    """A racy file read again unchanged leaves the copy as it is: the copy names it
    racy, so the loaded index reads it again and sees a same-stat rewrite."""
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        await begin(index)
        sh(ws, "echo aaaa > a.py")
        await index.changes()
        saved = await begin(index)  # nothing changed: a.py is not read again
        assert "a.py" in racy(decode(await blobs.get(saved)))
        path = ws / "a.py"
        st = path.stat()
        with open(path, "r+b") as f:  # same inode, same size
            f.write(b"bbbb\n")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
        loaded = await WorkspaceIndex.load_saved(saved, blobs)
        theirs, ours = await loaded.changes(), await index.changes()
        assert theirs == ours and [c.path for c in ours.changes] == ["a.py"]
        await loaded.close()
    finally:
        await index.close()


async def test_a_racy_entry_read_again_keeps_the_copy_and_a_forgotten_file_does_not(
    ws, monkeypatch
):
    """A racy file read again unchanged, once it is old, leaves the copy that holds
    its entry smudged as it is (it reads more than it needs); a file the engine
    wrote, which the copy would trust by stat, has a new copy stored."""
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        await begin(index)
        sh(ws, "echo a2 >> a.py")
        await index.changes()
        saved = await begin(index)
        assert "a.py" in racy(index) and "a.py" in racy(decode(await blobs.get(saved)))
        monkeypatch.setattr(capture, "_RACY_NS", 0)  # as if 3 s went by: a.py is old
        # A watched pass reads a racy file again only if an event names it; a walk
        # (the verify, or the fallback) reads every racy file again.
        index._planner.walk_next()
        puts = len(blobs.puts)
        assert await begin(index) == saved and len(blobs.puts) == puts
        assert racy(index) == set() and "a.py" in racy(decode(await blobs.get(saved)))
        monkeypatch.undo()
        # A file the live index reads again, but the copy would trust by stat: stored.
        index.forget("c.py")
        again = await begin(index)
        assert again != saved and "c.py" in racy(decode(await blobs.get(again)))
        same_files(await WorkspaceIndex.load_saved(again, blobs), index)
    finally:
        await index.close()


async def test_with_many_batches_the_last_put_carries_the_copy(ws, monkeypatch):
    monkeypatch.setattr(capture_read, "READ_BATCH_BYTES", 100)
    tree(ws, {f"d/f{i}.txt": "x" * 40 for i in range(10)})
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        await begin(index)
        puts = len(blobs.puts)
        sh(ws, "for i in 0 1 2 3 4 5 6 7 8 9; do echo y >> d/f$i.txt; done")
        got = await index.changes()
        assert len(got.changes) == 10
        stored = blobs.puts[puts:]
        assert len(stored) == 4 and sum(map(len, stored)) == 11  # 3 files a batch, 1 copy
        assert await begin(index) == stored[-1][-1] and len(blobs.puts) == puts + 4
        same_files(await WorkspaceIndex.load_saved(stored[-1][-1], blobs), index)
    finally:
        await index.close()


@pytest.mark.parametrize("how", ["fails", "fails after storing", "cancelled"])
async def test_a_pass_whose_put_fails_or_is_cancelled_leaves_the_index_and_its_copy(ws, how):
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        saved = await begin(index)
        files, was_racy = dict(index._files), racy(index)
        sh(ws, "echo a2 >> a.py && rm b.txt")
        puts = len(blobs.puts)
        if how.startswith("fails"):
            blobs.fail = StoreUnavailable("the disk is full")
            blobs.fail_first = how == "fails"
            with pytest.raises(StoreUnavailable):
                await index.changes()
            blobs.fail = None
        else:
            blobs.go.clear()
            blobs.entered.clear()
            pending = asyncio.ensure_future(index.changes())
            await blobs.entered.wait()
            pending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pending
            blobs.go.set()
        assert index._files == files and racy(index) == was_racy and len(blobs.puts) == puts
        assert index._copy.blob == saved and await blobs.exists(saved)
        assert await index.save() == saved  # still the index: nothing it names is unstored
        # The change is found by the next pass, whose copy is then the one saved.
        assert [c.path for c in (await index.changes()).changes] == ["a.py", "b.txt"]
        copy = blobs.puts[-1][-1]
        assert await index.save() == copy and await blobs.exists(copy)
        same_files(await WorkspaceIndex.load_saved(copy, blobs), index)
    finally:
        await index.close()


async def test_a_forget_during_a_pass_makes_the_next_save_store_a_copy(ws, monkeypatch):
    monkeypatch.setattr(capture, "_RACY_NS", 0)  # no file racy: c.py only by the forget
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        await begin(index)
        sh(ws, "echo a2 >> a.py")
        blobs.go.clear()
        blobs.entered.clear()
        pending = asyncio.ensure_future(index.changes())
        await blobs.entered.wait()
        index.forget("c.py")  # the engine's own write, while the pass stores
        blobs.go.set()
        await pending
        carried = blobs.puts[-1][-1]
        assert "c.py" not in decode(await blobs.get(carried)).racy
        saved = await index.save()
        assert saved != carried and "c.py" in decode(await blobs.get(saved)).racy
    finally:
        await index.close()


async def test_a_forget_during_a_save_makes_the_next_save_store_a_copy(ws, monkeypatch):
    monkeypatch.setattr(capture, "_RACY_NS", 0)  # no file racy: c.py only by the forget
    blobs = Counting()
    index = await watching_index(ws, blobs)
    try:
        await begin(index)
        index.forget("a.py")  # so that the next save stores a copy
        blobs.go.clear()
        blobs.entered.clear()
        pending = asyncio.ensure_future(index.save())
        await blobs.entered.wait()
        index.forget("c.py")  # the engine's own write, while save stores its copy
        blobs.go.set()
        first = await pending
        assert "c.py" not in decode(await blobs.get(first)).racy
        saved = await index.save()
        assert saved != first and "c.py" in decode(await blobs.get(saved)).racy
    finally:
        await index.close()


def test_after_pass_lays_a_pass_over_the_index_without_copying_it():
    sig = (1, 2, 3, 0o100644)
    files = {"a": (sig, "A"), "b": (sig, "B"), "c": (sig, "C")}
    after = after_pass(files, ["b"], {"d": (sig, None)}, [("a", (sig, "A2")), ("c", None)])
    assert dict(after) == {"a": (sig, "A2"), "d": (sig, None)} and len(after) == 2
    assert after.get("b") is None and after.get("c") is None and "a" in after
    assert files == {"a": (sig, "A"), "b": (sig, "B"), "c": (sig, "C")}  # untouched


async def test_a_capture_cut_off_at_a_carried_copy_is_finished_after_gc(tmp_path, ws):
    """The copy a command's changes() stored, named by the next CaptureStarted, is
    kept by gc with its whole copy while the capture is pending; the finisher logs
    what the cut-off command changed, against the user's edit in between."""
    from agent_host.session import events as ev
    from agent_host.session.host import AgentHost
    from agent_host.session.store import collect_garbage

    from ..conftest import make_backend

    store = make_backend("file", tmp_path).open()
    index = await watching_index(ws, store.blobs)
    await begin(index)
    sh(ws, "echo a2 >> a.py")
    await index.changes()
    sh(ws, "echo users > b.txt")  # the user's, between commands
    saved = await begin(index)
    delta = decode(await store.blobs.get(saved))
    assert isinstance(delta, SavedDelta)
    await index.close()  # a crash: its pins go with it
    opening = [
        ev.SessionStarted(workspace=str(ws)),
        ev.UserPrompt(text="run it"),
        ev.CaptureStarted(index=saved),
    ]
    await store.append("cut-off", opening, expected_head=0)
    sh(ws, "echo b2 >> b.txt && echo a3 >> a.py && rm src/m.py")  # before the crash
    await collect_garbage(store, grace_seconds=-1)
    host = AgentHost(store=store, workdir=ws, auto_compact=None)
    try:
        (checkpoint,) = await host.list_checkpoints("cut-off")
        assert sorted(checkpoint.files) == ["a.py", "b.txt", "src/m.py"]
        done = await host.restore("cut-off", checkpoint.seq)
        assert done.not_captured == []
        assert (ws / "a.py").read_text() == "a = 1\na2\n"
        assert (ws / "b.txt").read_text() == "users\n"
        assert (ws / "src/m.py").read_text() == "x = 1\n"
    finally:
        await host.close()
        await store.close()
