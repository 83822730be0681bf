"""Capture by watching: a WorkspaceIndex that drains inotify events finds exactly what
one that walks the whole workspace finds, whatever is done to the files, and walks
instead wherever its events cannot vouch for the change (queue overflow, the watch
limit, no inotify)."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_host.session import capture, capture_watch
from agent_host.session.blobs import MemoryBlobStore
from agent_host.session.capture import WorkspaceIndex
from agent_host.session.capture_diff import CapturedChanges
from agent_host.session.capture_watch import IN_Q_OVERFLOW, FolderWatcher

from .test_capture import racy

pytestmark = pytest.mark.skipif(
    FolderWatcher.open(["/"]) is None, reason="no inotify on this machine"
)

# A small namespace, so that operations meet: folders (two of them ignored: one by
# name, one by .gitignore) and names that are captured, .gitignored or neither.
FOLDERS = ["", "a", "a/b", "c", "a/b/d", "node_modules", "out", "c/node_modules"]
NAMES = ["f", "g.txt", "h.log", "k"]
GITIGNORE = "*.log\n/out/\n"


def paths() -> st.SearchStrategy[str]:
    return st.builds(
        lambda d, n: f"{d}/{n}" if d else n, st.sampled_from(FOLDERS), st.sampled_from(NAMES)
    )


OPS = st.one_of(
    st.tuples(st.just("write"), paths(), st.binary(max_size=40)),
    st.tuples(st.just("append"), paths(), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), paths()),
    st.tuples(st.just("rename"), paths(), paths()),
    st.tuples(st.just("mkdir"), st.sampled_from(FOLDERS[1:])),
    st.tuples(st.just("rmdir"), st.sampled_from(FOLDERS[1:])),
    st.tuples(st.just("mvdir"), st.sampled_from(FOLDERS[1:]), st.sampled_from(FOLDERS[1:])),
    st.tuples(st.just("symlink"), paths(), st.sampled_from(["f", "a", "/etc", "../x"])),
    st.tuples(st.just("chmod"), paths(), st.sampled_from([0o644, 0o755, 0o600])),
    st.tuples(st.just("chmod_dir"), st.sampled_from(FOLDERS[1:])),
    st.tuples(st.just("hardlink"), paths(), paths()),
    st.tuples(st.just("gitignore"), st.sampled_from([GITIGNORE, "*.txt\n", ""])),
)


def apply(ws: Path, op: tuple) -> None:
    """Do ``op`` to the workspace; an operation the tree does not allow is skipped."""
    kind, *args = op
    try:
        if kind in ("write", "append"):
            path = ws / args[0]
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb" if kind == "write" else "ab") as f:
                f.write(args[1])
        elif kind == "delete":
            (ws / args[0]).unlink()
        elif kind == "rename":
            (ws / args[1]).parent.mkdir(parents=True, exist_ok=True)
            os.rename(ws / args[0], ws / args[1])
        elif kind == "mkdir":
            (ws / args[0]).mkdir(parents=True, exist_ok=True)
        elif kind == "rmdir":
            shutil.rmtree(ws / args[0])
        elif kind == "mvdir":
            src, dst = ws / args[0], ws / args[1]
            if dst.is_relative_to(src):
                return
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, dst)
        elif kind == "symlink":
            (ws / args[0]).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(args[1], ws / args[0])
        elif kind == "chmod":
            if not (ws / args[0]).is_symlink():  # Linux has no lchmod
                os.chmod(ws / args[0], args[1])
        elif kind == "chmod_dir":
            os.chmod(ws / args[0], 0o700)
            os.chmod(ws / args[0], 0o755)
        elif kind == "hardlink":
            (ws / args[1]).parent.mkdir(parents=True, exist_ok=True)
            os.link(ws / args[0], ws / args[1])
        elif kind == "gitignore":
            (ws / ".gitignore").write_text(args[0])
    except (FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError, OSError):
        pass


def seed(ws: Path) -> None:
    (ws / ".gitignore").write_text(GITIGNORE)
    for folder in ("a/b", "c", "node_modules", "out"):
        (ws / folder).mkdir(parents=True, exist_ok=True)
    for rel in ("f", "a/g.txt", "a/b/f", "c/k", "node_modules/f", "out/f", "x.log"):
        (ws / rel).write_bytes(rel.encode())


async def both(
    watched: WorkspaceIndex, walked: WorkspaceIndex, report: bool, saved: str | None = None
) -> None:
    if report:
        got, want = await watched.changes(), await walked.changes()
        assert got == want
        if saved is not None:
            # The copy the watched index saved before the command (whole, a delta its
            # last pass stored with its contents, or one save() stored), loaded as a
            # crashed capture's finisher does, finds the same.
            loaded = await WorkspaceIndex.load_saved(saved, watched._blobs)
            try:
                assert await loaded.changes() == got
            finally:
                await loaded.close()
    else:
        await watched.refresh()
        await walked.refresh()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.tuples(st.lists(OPS, max_size=6), st.booleans()), min_size=1, max_size=6))
def test_the_watcher_finds_what_a_walk_finds(steps) -> None:
    asyncio.run(_same_as_the_walk(steps))


def _holds_linked(path: Path) -> bool:
    """Whether ``path`` is, or is a folder holding, a file with other hard links."""
    try:
        if path.is_symlink() or not path.exists():
            return False
        if not path.is_dir():
            return path.lstat().st_nlink > 1
        return any(
            p.lstat().st_nlink > 1 for p in path.rglob("*") if not p.is_dir() or p.is_symlink()
        )
    except OSError:
        return False


async def _same_as_the_walk(steps) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp).resolve() / "ws"
        ws.mkdir()
        seed(ws)
        blobs = MemoryBlobStore()
        watched = WorkspaceIndex([ws], blobs)
        walked = WorkspaceIndex([ws], blobs, watch=False)
        try:
            await both(watched, walked, report=False)
            assert watched.watching and watched.walks == 1
            walk_causes = 0
            for ops, report in steps:
                saved = await watched.save() if report else None
                for op in ops:
                    # A rename or folder move carrying a file with other hard links
                    # shows that file at a name the index never knew as linked: to the
                    # watcher, a new hard link.
                    moves_link = op[0] in ("rename", "mvdir") and _holds_linked(ws / op[1])
                    apply(ws, op)
                    walk_causes += op[0] in ("gitignore", "hardlink") or moves_link
                await both(watched, walked, report, saved)
            # Walks only where a .gitignore changed or a hard link appeared (whose
            # other names only a walk finds): otherwise every pass drained events.
            assert watched.walks <= 1 + walk_causes
            # The check: a walk of the watched index finds nothing it missed.
            watched.verify_next()
            assert await watched.changes() == CapturedChanges([], [])
        finally:
            await watched.close()
            await walked.close()


# --------------------------------------------------------------------------- fallbacks


@pytest.fixture
def ws(tmp_path) -> Path:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    seed(root)
    return root


async def _ten_changes(ws: Path, index: WorkspaceIndex, walked: WorkspaceIndex) -> None:
    """Change ten files and a folder by a command; both indexes must say the same."""
    await index.refresh()
    await walked.refresh()
    subprocess.run(
        [
            "sh",
            "-c",
            "for i in 0 1 2 3 4 5 6 7 8 9; do echo $i > a/n$i; done; rm c/k; mkdir -p e/f"
            " && echo e > e/f/new",
        ],
        cwd=ws,
        check=True,
    )
    got = await index.changes()
    assert got == await walked.changes()
    assert [c.path for c in got.changes] == [*(f"a/n{i}" for i in range(10)), "c/k", "e/f/new"]


async def test_a_queue_overflow_makes_the_pass_walk(ws: Path) -> None:
    blobs = MemoryBlobStore()
    index, walked = WorkspaceIndex([ws], blobs), WorkspaceIndex([ws], blobs, watch=False)
    try:
        await index.refresh()
        await walked.refresh()
        watcher = index._planner.watcher
        assert watcher is not None
        real_read = watcher.read

        def overflowed() -> list[tuple[int, int, int, str]]:
            # The kernel drops events past max_queued_events and queues this instead.
            return [*real_read()[:3], (-1, IN_Q_OVERFLOW, 0, "")]

        watcher.read = overflowed  # type: ignore[method-assign]
        walks = index.walks
        await _ten_changes(ws, index, walked)
        assert index.walks > walks  # the walk's result was used
        watcher.read = real_read  # type: ignore[method-assign]
        # Watching goes on after the walk set the watches again.
        assert index.watching
        walks = index.walks
        (ws / "a" / "n3").write_text("again")
        got = await index.changes()
        assert index.walks == walks
        assert [c.path for c in got.changes] == ["a/n3"]
    finally:
        await index.close()
        await walked.close()


async def test_a_real_queue_overflow_is_walked(ws: Path) -> None:
    """More events than fs.inotify.max_queued_events: the kernel's own overflow."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    blobs = MemoryBlobStore()
    index, walked = WorkspaceIndex([ws], blobs), WorkspaceIndex([ws], blobs, watch=False)
    try:
        await index.refresh()
        await walked.refresh()
        walks = index.walks
        touched = [ws / "a" / "t0", ws / "a" / "t1"]
        for path in touched:
            path.write_bytes(b"")
        # Alternating, so that the kernel cannot fold one event into the last.
        for i in range(limit + 10):
            os.utime(touched[i % 2], ns=(i, i))
        for i in range(7):
            (ws / "a" / f"t{i}").write_bytes(b"%d" % i)
        got = await index.changes()
        assert index.walks > walks
        assert got == await walked.changes()
        assert {c.path for c in got.changes} == {f"a/t{i}" for i in range(7)}
    finally:
        await index.close()
        await walked.close()


async def test_the_watch_limit_makes_every_pass_walk(ws: Path, monkeypatch) -> None:
    blobs = MemoryBlobStore()
    real = capture_watch.default_inotify

    def limited():
        inotify = real()
        added = 0
        real_add = inotify.add_watch

        def add_watch(path, mask):
            nonlocal added
            added += 1
            if added > 3:  # as inotify_add_watch(2) does past max_user_watches
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_add(path, mask)

        inotify.add_watch = add_watch
        return inotify

    index = WorkspaceIndex([ws], blobs, inotify=limited)
    walked = WorkspaceIndex([ws], blobs, watch=False)
    try:
        await index.refresh()
        assert not index.watching
        await _ten_changes(ws, index, walked)
        assert index.walks >= 3
    finally:
        await index.close()
        await walked.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="lowering fs.inotify.max_user_watches needs root")
async def test_the_kernels_watch_limit_makes_every_pass_walk(ws: Path) -> None:
    """fs.inotify.max_user_watches below the workspace's folders, for real."""
    knob = Path("/proc/sys/fs/inotify/max_user_watches")
    try:
        was = knob.read_text()
        knob.write_text("4\n")
    except OSError as exc:
        pytest.skip(f"cannot set {knob}: {exc}")
    blobs = MemoryBlobStore()
    index, walked = WorkspaceIndex([ws], blobs), WorkspaceIndex([ws], blobs, watch=False)
    try:
        await index.refresh()
    finally:
        knob.write_text(was)
    try:
        assert not index.watching
        await _ten_changes(ws, index, walked)
    finally:
        await index.close()
        await walked.close()


@pytest.mark.parametrize(
    "fault",
    [ImportError("No module named 'inotify_simple'"), OSError(errno.EMFILE, "Too many open files")],
)
async def test_no_inotify_means_every_pass_walks(ws: Path, fault: Exception) -> None:
    def unavailable():
        raise fault

    blobs = MemoryBlobStore()
    index = WorkspaceIndex([ws], blobs, inotify=unavailable)
    walked = WorkspaceIndex([ws], blobs, watch=False)
    try:
        await index.refresh()
        assert not index.watching
        await _ten_changes(ws, index, walked)
        assert index.walks == 4  # the first index, and each of three passes
    finally:
        await index.close()
        await walked.close()


async def test_a_folder_made_by_the_command_is_scanned_and_watched(ws: Path) -> None:
    blobs = MemoryBlobStore()
    index, walked = WorkspaceIndex([ws], blobs), WorkspaceIndex([ws], blobs, watch=False)
    try:
        await _ten_changes(ws, index, walked)
        assert index.walks == 1  # the first index only
        await index.refresh()
        # The new folder is watched now: a change in it is an event.
        (ws / "e" / "f" / "new").write_text("changed")
        got = await index.changes()
        assert index.walks == 1
        assert [c.path for c in got.changes] == ["e/f/new"]
    finally:
        await index.close()
        await walked.close()


async def test_a_change_no_event_tells_of_is_found_by_the_verify_walk(ws: Path) -> None:
    """A hard link's other name changes with no event in its folder, so such files
    are lstat'ed every pass; a write no event tells of at all (here, one made while
    the watcher's queue is read away) is found by the periodic or asked-for walk."""
    blobs = MemoryBlobStore()
    index = WorkspaceIndex([ws], blobs)
    long_ago = 1_000_000_000 * 10**9
    os.utime(ws / "f", ns=(long_ago, long_ago))  # not racy: no pass reads it again
    try:
        os.link(ws / "a" / "b" / "f", ws / "c" / "linked")
        await index.refresh()
        (ws / "a" / "b" / "f").write_text("through the other name")
        got = await index.changes()
        assert [c.path for c in got.changes] == ["a/b/f", "c/linked"]
        assert index.walks == 1
        (ws / "f").write_text("unseen")
        assert index._planner.watcher is not None
        index._planner.watcher.read()  # the event is lost
        assert (await index.changes()).changes == []
        index.verify_next()
        got = await index.changes()
        assert [c.path for c in got.changes] == ["f"]
        assert index.walks == 2
    finally:
        await index.close()


async def test_a_racy_file_is_read_again_when_an_event_names_it_or_a_walk_runs(
    ws: Path, monkeypatch
) -> None:
    """A file read as its mtime ticks may change again and keep its stat. A watched
    pass reads it again only when an event names it -- every change after the read
    is one -- not on every pass while it is racy. It stays racy however many passes
    go by until one reads it, so that a walk (events lost) still reads it."""
    reads: list[str] = []
    real_read = capture.read_batch

    def counted(root, batch, cap):
        reads.extend(item.path for item in batch)
        return real_read(root, batch, cap)

    monkeypatch.setattr(capture, "read_batch", counted)
    blobs = MemoryBlobStore()
    index = WorkspaceIndex([ws], blobs)

    def rewrite_keeping_the_stat(path: Path, data: bytes) -> None:
        st = path.stat()
        assert len(data) == st.st_size
        with open(path, "r+b") as f:  # same inode, same size
            f.write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime

    try:
        await index.refresh()
        path = ws / "a" / "b" / "f"
        path.write_bytes(b"aaaa")
        assert [c.path for c in (await index.changes()).changes] == ["a/b/f"]
        assert "a/b/f" in racy(index)
        reads.clear()
        (ws / "c" / "k").write_text("other")
        assert [c.path for c in (await index.changes()).changes] == ["c/k"]
        assert reads == ["c/k"] and "a/b/f" in racy(index)  # not read, still racy
        # A same-stat rewrite is an event: read, and found.
        rewrite_keeping_the_stat(path, b"bbbb")
        (change,) = (await index.changes()).changes
        assert change.path == "a/b/f" and await blobs.get(change.after) == b"bbbb"
        (ws / "c" / "k").write_text("again")
        await index.changes()
        assert "a/b/f" in racy(index) and index.walks == 1
        # Its event lost: the walk reads it whatever its stat says.
        rewrite_keeping_the_stat(path, b"cccc")
        assert index._planner.watcher is not None
        index._planner.watcher.read()
        index.verify_next()
        (change,) = (await index.changes()).changes
        assert change.path == "a/b/f" and await blobs.get(change.after) == b"cccc"
        assert index.walks == 2
    finally:
        await index.close()
