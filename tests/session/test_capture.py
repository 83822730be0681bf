"""WorkspaceIndex: what real shell commands change in a workspace, captured as file
changes whose blobs hold the exact bytes before and after."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
from pathlib import Path

import pytest

from agent_host.session import capture_read
from agent_host.session.blobs import FileBlobStore, MemoryBlobStore
from agent_host.session.capture import DEFAULT_IGNORES, WorkspaceIndex
from agent_host.session.capture_diff import SMUDGED, CapturedChanges, FileChange
from agent_host.session.capture_saved import SavedDelta, SavedIndex
from agent_host.session.store import open_store


@pytest.fixture(params=["file", "memory", "sqlite"])
async def blobs(request, tmp_path):
    if request.param == "file":
        yield FileBlobStore(tmp_path / "blobs")
    elif request.param == "memory":
        yield MemoryBlobStore()
    else:
        store = open_store(f"sqlite://{tmp_path / 'store.db'}")
        yield store.blobs
        await store.close()


@pytest.fixture
def ws(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
async def index(ws, blobs):
    idx = WorkspaceIndex([ws], blobs)
    yield idx
    await idx.close()


def racy(index: WorkspaceIndex | SavedIndex | SavedDelta) -> set[str]:
    """The files an index, or a stored copy of one, reads again whatever their stat:
    those whose entry is smudged (read too close to a change), and its racy set (a
    loaded copy's, not read yet)."""
    if isinstance(index, WorkspaceIndex):
        files, extra = index._files, index._racy
    else:
        files, extra = index.files, index.racy
    return {p for p, e in files.items() if e is not None and e[0][0] == SMUDGED} | extra


def tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content)
        else:
            path.write_bytes(content)


def sh(cwd: Path, command: str, check: bool = True) -> int:
    return subprocess.run(["sh", "-c", command], cwd=cwd, check=check).returncode


async def command(index: WorkspaceIndex, cwd: Path, cmd: str, check: bool = True):
    """A turn's run_command as the engine wraps it: refresh, run, changes."""
    await index.refresh()
    sh(cwd, cmd, check=check)
    return await index.changes()


async def contents(blobs, change: FileChange) -> tuple[bytes | None, bytes | None]:
    before = None if change.before is None else await blobs.get(change.before)
    after = None if change.after is None else await blobs.get(change.after)
    return before, after


# --------------------------------------------------------------------------- what commands do


async def test_sed_in_place_is_a_change_with_the_exact_old_and_new_bytes(ws, index, blobs):
    tree(ws, {"a.py": "x = 1\ny = 2\n", "b.py": "unchanged\n"})
    got = await command(index, ws, "sed -i 's/1/10/' a.py")
    assert [c.path for c in got.changes] == ["a.py"]
    assert got.not_captured == []
    (change,) = got.changes
    assert await contents(blobs, change) == (b"x = 1\ny = 2\n", b"x = 10\ny = 2\n")
    assert (change.executable_before, change.executable_after) == (False, False)


async def test_echo_over_a_file(ws, index, blobs):
    tree(ws, {"a.py": "old\n"})
    (change,) = (await command(index, ws, "echo changed > a.py")).changes
    assert await contents(blobs, change) == (b"old\n", b"changed\n")


async def test_rm_is_a_deletion(ws, index, blobs):
    tree(ws, {"a.py": "gone soon\n", "keep.py": "k\n"})
    got = await command(index, ws, "rm a.py")
    assert got.changes == [FileChange("a.py", got.changes[0].before, None, False, None)]
    assert await blobs.get(got.changes[0].before) == b"gone soon\n"


async def test_mv_is_a_delete_plus_a_create_of_the_same_blob(ws, index):
    tree(ws, {"a.py": "moving\n"})
    got = await command(index, ws, "mv a.py b.py")
    a, b = got.changes
    assert (a.path, a.after, b.path, b.before) == ("a.py", None, "b.py", None)
    assert a.before == b.after is not None


async def test_mkdir_and_a_new_file_in_it(ws, index, blobs):
    tree(ws, {"a.py": ""})
    (change,) = (await command(index, ws, "mkdir -p d/e && echo x > d/e/f")).changes
    assert (change.path, change.before, change.executable_before) == ("d/e/f", None, None)
    assert await blobs.get(change.after) == b"x\n"


async def test_chmod_x_alone_is_a_change_with_the_same_blob(ws, index):
    tree(ws, {"run.sh": "echo hi\n"})
    (change,) = (await command(index, ws, "chmod +x run.sh")).changes
    assert change.before == change.after is not None
    assert (change.executable_before, change.executable_after) == (False, True)
    back = await command(index, ws, "chmod -x run.sh")
    assert [(c.executable_before, c.executable_after) for c in back.changes] == [(True, False)]


async def test_other_mode_bits_alone_are_not_a_change(ws, index):
    tree(ws, {"a.py": "a\n"})
    assert (await command(index, ws, "chmod g+w,o-r a.py")).changes == []


async def test_a_binary_file_written_by_python(ws, index, blobs):
    data = bytes(range(256)) * 3 + b"\x00\xff"
    tree(ws, {"img.bin": b"\x89PNG old"})
    script = f"open('img.bin', 'wb').write({data!r}); open('new.bin', 'wb').write(b'\\x00')"
    await index.refresh()
    subprocess.run(["python3", "-c", script], cwd=ws, check=True)
    got = await index.changes()
    assert [c.path for c in got.changes] == ["img.bin", "new.bin"]
    assert await contents(blobs, got.changes[0]) == (b"\x89PNG old", data)
    assert await contents(blobs, got.changes[1]) == (None, b"\x00")


async def test_a_command_in_a_subfolder_reports_root_relative_paths(ws, index):
    tree(ws, {"pkg/sub/mod.py": "a\n"})
    got = await command(index, ws / "pkg" / "sub", "echo b > mod.py && echo c > ../new.py")
    assert [c.path for c in got.changes] == ["pkg/new.py", "pkg/sub/mod.py"]


async def test_a_command_that_fails_halfway_keeps_what_it_did(ws, index, blobs):
    tree(ws, {"x": "old x\n"})
    await index.refresh()
    assert sh(ws, "set -e; echo a > x; false; echo b > y", check=False) != 0
    got = await index.changes()
    assert [c.path for c in got.changes] == ["x"]
    assert await contents(blobs, got.changes[0]) == (b"old x\n", b"a\n")
    both = await command(index, ws, "echo a2 > x; false; echo b > y", check=False)
    assert [c.path for c in both.changes] == ["x", "y"]


async def test_touch_is_not_a_change(ws, index):
    tree(ws, {"a.py": "same\n"})
    await index.refresh()
    before = (ws / "a.py").stat().st_mtime_ns
    sh(ws, "sleep 0.01; touch a.py; cp a.py b.tmp && mv b.tmp a.py")  # new mtime and inode
    assert (ws / "a.py").stat().st_mtime_ns != before
    assert await index.changes() == CapturedChanges([], [])


async def test_a_user_edit_before_refresh_is_not_reported(ws, index, blobs):
    tree(ws, {"a.py": "v1\n", "b.py": "b\n"})
    await index.refresh()
    (ws / "a.py").write_text("v2 by the user\n")  # between commands
    (ws / "mine.py").write_text("the user's new file\n")
    got = await command(index, ws, "echo cmd > b.py")
    assert [c.path for c in got.changes] == ["b.py"]
    # The command's change of a.py is against the user's version, which refresh stored.
    (change,) = (await command(index, ws, "echo v3 > a.py")).changes
    assert await contents(blobs, change) == (b"v2 by the user\n", b"v3\n")


async def test_a_same_size_rewrite_within_the_same_timestamp_is_seen(ws, index, blobs):
    """A file read as its mtime ticks may change again with the same stat (a coarse
    clock): the index reads such racy files again."""
    tree(ws, {"a.py": "aaaa\n"})
    await index.refresh()
    path = ws / "a.py"
    st = path.stat()
    with open(path, "r+b") as f:  # same inode, same size
        f.write(b"bbbb\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    (change,) = (await index.changes()).changes
    assert await contents(blobs, change) == (b"aaaa\n", b"bbbb\n")


async def test_a_whole_second_stamp_stays_racy_for_seconds_a_fine_one_briefly(ws, index, blobs):
    """A filesystem that stores whole seconds (ext3, HFS+; FAT two) can give a change
    made a second after the read the same mtime: such a file is read again for 3 s.
    A stamp with a fraction of a second is from a fine clock: racy for 100 ms only."""
    import time

    tree(ws, {"coarse.py": "aaaa\n", "fine.py": "aaaa\n"})
    second = (time.time_ns() // 1_000_000_000) * 1_000_000_000  # this whole second
    fine = time.time_ns() - 500_000_000  # half a second ago, with a fraction
    os.utime(ws / "coarse.py", ns=(second, second))
    os.utime(ws / "fine.py", ns=(fine, fine))
    await index.refresh()
    assert racy(index) == {"coarse.py"}
    # A same-size rewrite keeping the whole-second stamp is still seen.
    (ws / "coarse.py").write_text("bbbb\n")
    os.utime(ws / "coarse.py", ns=(second, second))
    (change,) = (await index.changes()).changes
    assert change.path == "coarse.py"
    assert await contents(blobs, change) == (b"aaaa\n", b"bbbb\n")


# --------------------------------------------------------------------------- not captured


async def test_gitignored_files_and_node_modules_are_not_captured(ws, index):
    tree(
        ws,
        {
            ".gitignore": "*.log\nout/\n",
            "app.log": "1\n",
            "out/x.o": "o",
            "node_modules/pkg/index.js": "old",
            "node_modules/.package-lock.json": "{}",
            "src/a.py": "a\n",
        },
    )
    got = await command(
        index,
        ws,
        "echo 2 >> app.log; echo new > new.log; echo o2 > out/x.o; "
        "echo '{ }' > node_modules/.package-lock.json; echo a2 > src/a.py",
    )
    assert [c.path for c in got.changes] == ["src/a.py"]
    assert got.not_captured == ["app.log", "new.log", "node_modules/", "out/"]


async def test_changes_deep_inside_an_ignored_folder_are_not_seen(ws, index):
    tree(ws, {"node_modules/pkg/lib/index.js": "old", "a.py": ""})
    got = await command(index, ws, "echo new > node_modules/pkg/lib/index.js")
    assert got == CapturedChanges([], [])


async def test_an_ignored_folder_made_or_removed(ws, index):
    tree(ws, {"a.py": "", "sub/.venv/bin/python": "", "sub/b.py": ""})
    got = await command(index, ws, "rm -r sub/.venv && mkdir -p node_modules/x")
    assert got == CapturedChanges([], ["node_modules/", "sub/.venv/"])


async def test_every_default_ignore_is_skipped(ws, index):
    tree(ws, {f"{name}/f": "" for name in DEFAULT_IGNORES} | {"a.py": ""})
    got = await command(index, ws, " && ".join(f"echo x > {n}/f" for n in DEFAULT_IGNORES))
    assert got.changes == []
    assert got.not_captured == sorted(f"{n}/" for n in DEFAULT_IGNORES)


async def test_a_file_over_the_cap_is_not_captured(ws, blobs):
    tree(ws, {"big.bin": b"x" * 100, "small.txt": "s"})
    index = WorkspaceIndex([ws], blobs, max_file_bytes=64)
    try:
        got = await command(index, ws, "echo y >> big.bin; head -c 65 /dev/zero > grew.bin")
        assert got == CapturedChanges([], ["big.bin", "grew.bin"])
        grown = await command(index, ws, "head -c 100 /dev/zero > small.txt")
        assert grown == CapturedChanges([], ["small.txt"])
    finally:
        await index.close()


async def test_symlinks_are_not_followed_nor_captured(ws, index, tmp_path):
    outside = tmp_path / "outside"
    tree(outside, {"secret.txt": "s\n", "d/f": "f\n"})
    tree(ws, {"a.py": "a\n"})
    got = await command(
        index, ws, f"ln -s {outside}/secret.txt link.txt && ln -s {outside}/d dirlink"
    )
    assert got == CapturedChanges([], ["dirlink", "link.txt"])
    replaced = await command(index, ws, "rm a.py && ln -s link.txt a.py")
    assert [(c.path, c.after) for c in replaced.changes] == [("a.py", None)]
    assert replaced.not_captured == ["a.py"]


async def test_ignoring_a_folder_does_not_report_its_files_deleted(ws, index):
    tree(ws, {"gen/a.py": "a\n", "gen/b.py": "b\n", ".gitignore": ""})
    got = await command(index, ws, "echo 'gen/' > .gitignore")
    assert [c.path for c in got.changes] == [".gitignore"]
    assert got.not_captured == ["gen/"]
    back = await command(index, ws, "echo > .gitignore")
    assert [c.path for c in back.changes] == [".gitignore"]  # gen/a.py is not "created"


# --------------------------------------------------------------------------- errors


async def test_an_unreadable_file_is_not_captured_and_not_an_error(ws, index, monkeypatch):
    tree(ws, {"a.py": "a\n"})
    await index.refresh()
    sh(ws, "echo new > locked.py && echo b > a.py")
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if str(path).endswith("locked.py"):  # what EACCES does to a non-root user
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    got = await index.changes()
    assert [c.path for c in got.changes] == ["a.py"]
    assert got.not_captured == ["locked.py"]


async def test_a_file_that_vanishes_mid_walk_is_not_captured(ws, index, monkeypatch):
    tree(ws, {"a.py": "a\n"})
    await index.refresh()
    sh(ws, "echo x > fleeting.tmp")
    real_open = os.open

    def vanishing(path, flags, *args, **kwargs):
        if str(path).endswith("fleeting.tmp"):
            os.unlink(path)  # deleted by someone between the walk's lstat and the read
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", vanishing)
    assert await index.changes() == CapturedChanges([], ["fleeting.tmp"])


# --------------------------------------------------------------------------- the index itself


async def test_start_does_not_block_and_refresh_awaits_the_first_index(ws, blobs):
    tree(ws, {f"d{i % 5}/f{i}.py": f"{i}\n" for i in range(50)})
    index = WorkspaceIndex([ws], blobs)
    try:
        index.start()
        index.start()  # idempotent
        assert not index._first.done()  # begun, not awaited
        await index.refresh()
        sh(ws, "rm d1/f1.py")
        got = await index.changes()
        assert [c.path for c in got.changes] == ["d1/f1.py"]
        assert await blobs.get(got.changes[0].before) == b"1\n"
    finally:
        await index.close()


async def test_changes_without_start_indexes_first(ws, index):
    tree(ws, {"a.py": "a\n"})
    assert await index.changes() == CapturedChanges([], [])


async def test_forget_takes_the_engines_own_write_as_known(ws, index, blobs):
    tree(ws, {"a.py": "v1\n"})
    await index.refresh()
    (ws / "a.py").write_text("v2 by write_file\n")
    index.forget("a.py")
    index.forget(str(ws / "a.py"))  # absolute spellings are the same file
    index.forget("/somewhere/else.py")  # outside: nothing to forget
    assert await index.changes() == CapturedChanges([], [])
    (change,) = (await command(index, ws, "echo v3 > a.py")).changes
    assert await blobs.get(change.before) == b"v2 by write_file\n"


async def test_close_cancels_the_first_index(ws, blobs):
    tree(ws, {"a.py": "a\n"})
    index = WorkspaceIndex([ws], blobs)
    index.start()
    await index.close()
    await index.close()


async def test_a_second_root_shows_absolute_paths(ws, blobs, tmp_path):
    other = (tmp_path / "other").resolve()
    tree(other, {"lib.py": "l\n"})
    tree(ws, {"a.py": "a\n"})
    index = WorkspaceIndex([ws, other], blobs)
    try:
        got = await command(index, ws, f"echo l2 > {other}/lib.py && echo a2 > a.py")
        assert [c.path for c in got.changes] == [f"{other.as_posix()}/lib.py", "a.py"]
    finally:
        await index.close()


async def test_a_nested_root_is_not_walked_twice(ws, blobs):
    tree(ws, {"a.py": "a\n", "sub/b.py": "b\n"})
    index = WorkspaceIndex([ws, ws / "sub"], blobs)
    try:
        got = await command(index, ws, "echo b2 > sub/b.py")
        assert [c.path for c in got.changes] == ["sub/b.py"]
    finally:
        await index.close()


class _Recording:
    """A blob store that notes the bytes each put_many is handed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.batches: list[int] = []

    async def put_many(self, datas, pin=None):
        self.batches.append(sum(len(d) for d in datas))
        return await self.inner.put_many(datas, pin)

    def __getattr__(self, name):
        return getattr(self.inner, name)


async def test_the_first_index_reads_in_bounded_batches(ws, tmp_path, monkeypatch):
    monkeypatch.setattr(capture_read, "READ_BATCH_BYTES", 10_000)
    tree(ws, {f"d{i % 7}/f{i}.bin": os.urandom(1000) for i in range(100)})
    store = FileBlobStore(tmp_path / "blobs")
    recording = _Recording(store)
    index = WorkspaceIndex([ws], recording)
    try:
        await index.refresh()
        assert sum(recording.batches) >= 100_000  # everything stored (racy files twice)
        assert max(recording.batches) <= 10_000
        every = {blob for _, blob in index._files.values()}
        assert len(every) == 100 and await store.missing(every) == set()
        stored = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
        assert not [p for p in stored if p.name.startswith(".tmp-")]
        old = (ws / "d3" / "f3.bin").read_bytes()
        got = await command(index, ws, "rm d3/f3.bin")
        assert await store.get(got.changes[0].before) == old
    finally:
        await index.close()


async def test_file_blob_store_put_many_syncs_many_blobs_together(tmp_path):
    store = FileBlobStore(tmp_path / "blobs")
    datas = [f"blob {i}".encode() for i in range(200)] + [b"blob 0"]
    ids = await store.put_many(datas)
    assert len(set(ids)) == 200 and ids[0] == ids[-1]
    assert [await store.get(b) for b in ids] == datas
    files = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].parent.name == "batches"  # one pack: one sync
    assert await store.put_many(datas[:50]) == ids[:50]  # known: nothing written again
    assert [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == files


async def test_passes_run_one_at_a_time(ws, index):
    tree(ws, {f"f{i}.py": f"{i}\n" for i in range(30)})
    await index.refresh()
    sh(ws, "echo changed > f3.py")
    results = await asyncio.gather(index.changes(), index.changes())
    assert sorted(len(r.changes) for r in results) == [0, 1]


class _Slow:
    """A blob store whose put_many waits until let go."""

    def __init__(self) -> None:
        self.inner = MemoryBlobStore()
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    async def put_many(self, datas, pin=None):
        self.entered.set()
        await self.go.wait()
        return await self.inner.put_many(datas, pin)

    def __getattr__(self, name):
        return getattr(self.inner, name)


async def test_a_cancelled_pass_loses_nothing(ws):
    tree(ws, {"a.py": "a\n"})
    slow = _Slow()
    slow.go.set()
    index = WorkspaceIndex([ws], slow)
    try:
        await index.refresh()
        sh(ws, "echo b > a.py")
        slow.go.clear()
        slow.entered.clear()
        pending = asyncio.ensure_future(index.changes())
        await slow.entered.wait()  # the change was seen, its content not yet stored
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        slow.go.set()
        (change,) = (await index.changes()).changes
        assert await slow.get(change.before) == b"a\n"
    finally:
        await index.close()
