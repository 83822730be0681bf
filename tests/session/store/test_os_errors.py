"""What the operating system refuses reaches the caller typed, and leaves no lie behind.

A full disk (a small tmpfs, filled) and injected I/O errors: an append either
returns its head, readable by a fresh store, or raises StoreUnavailable having left
nothing, and the next append with the last returned head succeeds. A read-only
store (a read-only bind mount, or a store the reading user may not write) can be
read, and a write to it names the folder and the reason. Mounting needs root and a
kernel that lets this sandbox mount: tests that need it skip, saying why, if not.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agent_host.session import FileCheckpointer, SqliteCheckpointer
from agent_host.session.errors import StoreUnavailable
from agent_host.session.events import AssistantMessage, SessionStarted, UserPrompt
from agent_host.session.store import file as file_store
from agent_host.session.store import file_index, file_stash, log_file
from agent_host.session.store.sqlite import MIGRATIONS

from .logs import content, write_at_content_end

NO_SPACE = os.strerror(errno.ENOSPC)
READ_ONLY = os.strerror(errno.EROFS)

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="tmpfs and bind mounts")


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, text=True)


def _mount_or_skip(*command: str) -> None:
    try:
        _run(*command)
    except (OSError, subprocess.CalledProcessError) as exc:
        reason = getattr(exc, "stderr", None) or exc
        pytest.skip(f"cannot mount here ({' '.join(command)}): {reason}")


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs: small enough to fill in a moment."""
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount_or_skip("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(disk))
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def read_only_view(tmp_path):
    """A folder, and a read-only bind mount of it: what a reader of the mount sees."""
    src, view = tmp_path / "src", tmp_path / "view"
    src.mkdir()
    view.mkdir()
    _mount_or_skip("mount", "--bind", str(src), str(view))
    try:
        _run("mount", "-o", "remount,bind,ro", str(view))
    except subprocess.CalledProcessError as exc:
        subprocess.run(["umount", "-l", str(view)], check=False)
        pytest.skip(f"cannot remount a bind mount read-only here: {exc.stderr}")
    yield src, view
    subprocess.run(["umount", "-l", str(view)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last page; the file that did it, to delete to free space."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        with pytest.raises(OSError) as raised:
            while True:
                f.write(bytes(4096))
    assert raised.value.errno == errno.ENOSPC
    return filler


def files_in(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder``, with its size and mtime."""
    found = {}
    for path in sorted(folder.rglob("*")):
        st = path.stat()
        found[str(path.relative_to(folder))] = (st.st_size, st.st_mtime_ns)
    return found


async def fresh_head(root: Path, session_id: str = "s1") -> int:
    store = FileCheckpointer(root)
    try:
        events = await store.read(session_id)
        head = await store.head(session_id)
        assert [e.seq for e in events] == list(range(1, head + 1))
        return head
    finally:
        await store.close()


# -- a full disk: the file store


@linux_only
async def test_appends_on_a_full_disk_either_return_their_head_or_leave_nothing(small_disk):
    root = small_disk / "store"
    store = FileCheckpointer(root)
    last = await store.append("s1", [SessionStarted(workspace="/w"), UserPrompt(text="go")])
    filler = fill(small_disk)
    returned = failed = 0
    for n in range(200):
        try:
            last = await store.append("s1", [AssistantMessage(text=f"{n} " * 100)], last)
            returned += 1
            assert await fresh_head(root) == last
        except StoreUnavailable as exc:
            failed += 1
            assert NO_SPACE in str(exc) and str(root) in str(exc), exc
            assert exc.errno == errno.ENOSPC
            assert await fresh_head(root) == last
            if failed == 3:
                break
    assert failed == 3, "the disk never filled up"
    assert returned > 0, "no append fitted in the zeros a log keeps ahead"
    filler.unlink()
    # No spurious CheckpointConflictError: what was returned is the head.
    assert await store.append("s1", [UserPrompt(text="after")], last) == last + 1
    assert await fresh_head(root) == last + 1
    assert [(i.id, i.head) for i in await FileCheckpointer(root).list()] == [("s1", last + 1)]


def pad_index(root: Path, room: int) -> None:
    """Append a valid index line that leaves ``room`` bytes in the index's last page."""
    index = root / "index.jsonl"
    frame = len(b'["!",""]\n')
    pad = (4096 - room - index.stat().st_size) % 4096
    if pad < frame + 1:
        pad += 4096
    with open(index, "ab") as f:
        f.write(b'["!","' + b"p" * (pad - frame) + b'"]\n')
    assert (4096 - index.stat().st_size % 4096) == room


@linux_only
async def test_an_index_line_the_full_disk_cuts_short_does_not_fail_the_append(small_disk, caplog):
    """The log write lands in its zeros, the ``?`` fits, the record does not."""
    root = small_disk / "store"
    store = FileCheckpointer(root)
    assert await store.append("s1", [UserPrompt(text="one")]) == 1
    pending = len(b'["?","s1"]\n')
    pad_index(root, pending + 5)  # the record line is cut after 5 bytes
    filler = fill(small_disk)
    with caplog.at_level(logging.WARNING):
        assert await store.append("s1", [AssistantMessage(text="two")], 1) == 2
    assert "index could not record it" in caplog.text
    assert not content(root / "index.jsonl").endswith(b"\n")  # cut short
    assert await fresh_head(root) == 2
    assert [(i.id, i.head) for i in await FileCheckpointer(root).list()] == [("s1", 2)]
    filler.unlink()
    assert await store.append("s1", [UserPrompt(text="three")], 2) == 3
    for _ in range(2):  # the damaged index is rebuilt, then read
        assert [(i.id, i.head) for i in await FileCheckpointer(root).list()] == [("s1", 3)]


@linux_only
async def test_a_log_that_cannot_grow_on_a_full_disk_is_left_as_it_was(small_disk):
    root = small_disk / "store"
    store = FileCheckpointer(root)
    assert await store.append("s1", [UserPrompt(text="one")]) == 1
    log = root / "sessions" / "s1.jsonl"
    before = content(log)
    filler = fill(small_disk)
    with pytest.raises(StoreUnavailable) as raised:
        # Past the zeros ahead of the content: the file must grow, and cannot.
        await store.append("s1", [AssistantMessage(text="x" * 6000)], 1)
    assert str(raised.value) == f"cannot append to {log}: {NO_SPACE}"
    assert content(log) == before
    assert await store.head("s1") == 1
    assert await fresh_head(root) == 1
    filler.unlink()
    assert await store.append("s1", [AssistantMessage(text="x" * 6000)], 1) == 2
    assert await fresh_head(root) == 2


# -- injected failures: the file store


@pytest.fixture
async def store_with_one(tmp_path):
    store = FileCheckpointer(tmp_path / "store")
    await store.append("s1", [UserPrompt(text="one"), AssistantMessage(text="a")])
    yield store
    await store.close()


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, NO_SPACE)


def eio(*args, **kwargs):
    raise OSError(errno.EIO, os.strerror(errno.EIO))


async def test_a_failed_index_record_after_the_log_write_still_returns_the_head(
    store_with_one, monkeypatch, caplog
):
    store = store_with_one
    monkeypatch.setattr(file_index.SessionIndex, "record", lambda self, *a: enospc())
    with caplog.at_level(logging.WARNING):
        assert await store.append("s1", [UserPrompt(text="two")], 2) == 3
    assert NO_SPACE in caplog.text
    assert await fresh_head(store.root) == 3
    assert [(i.id, i.head) for i in await FileCheckpointer(store.root).list()] == [("s1", 3)]
    monkeypatch.undo()
    assert await store.append("s1", [UserPrompt(text="three")], 3) == 4
    assert [(i.id, i.head) for i in await FileCheckpointer(store.root).list()] == [("s1", 4)]


async def test_a_failed_index_mark_before_the_write_fails_the_append_with_nothing_written(
    store_with_one, monkeypatch
):
    store = store_with_one
    monkeypatch.setattr(file_index.SessionIndex, "pending", lambda self, *a: enospc())
    with pytest.raises(StoreUnavailable, match=NO_SPACE):
        await store.append("s1", [UserPrompt(text="two")], 2)
    monkeypatch.undo()
    assert await fresh_head(store.root) == 2
    assert await store.append("s1", [UserPrompt(text="two")], 2) == 3


async def test_a_write_whose_sync_fails_is_taken_back(store_with_one, monkeypatch):
    """The bytes reached the page cache, where any reader would see them: cut back."""
    store = store_with_one
    log = store.root / "sessions" / "s1.jsonl"
    before = content(log)
    monkeypatch.setattr(log_file.os, "fdatasync", eio)
    with pytest.raises(StoreUnavailable) as raised:
        await store.append("s1", [UserPrompt(text="lost")], 2)
    monkeypatch.undo()
    assert str(raised.value) == f"cannot append to {log}: {os.strerror(errno.EIO)}"
    assert raised.value.errno == errno.EIO
    assert content(log) == before
    assert await fresh_head(store.root) == 2
    assert await store.head("s1") == 2
    assert await store.append("s1", [UserPrompt(text="kept")], 2) == 3
    assert [e.text for e in (await store.read("s1"))[2:]] == ["kept"]


async def test_a_truncate_whose_stash_write_fails_changes_nothing(store_with_one, monkeypatch):
    store = store_with_one
    monkeypatch.setattr(file_stash, "add_to_stash", lambda *a: enospc())
    with pytest.raises(StoreUnavailable, match=f"cannot truncate .*: {NO_SPACE}"):
        await store.truncate("s1", 1)
    monkeypatch.undo()
    assert await fresh_head(store.root) == 2
    assert await store.truncations("s1") == []


@pytest.mark.parametrize("inside_an_append", [False, True])
async def test_a_truncate_whose_log_cut_fails_leaves_log_and_stash_as_they_were(
    tmp_path, monkeypatch, inside_an_append
):
    store = FileCheckpointer(tmp_path / "store")
    await store.append("s1", [UserPrompt(text="one")])
    await store.append("s1", [AssistantMessage(text="a"), AssistantMessage(text="b")])
    log = store.root / "sessions" / "s1.jsonl"
    before = content(log)
    if inside_an_append:  # seq 2 falls inside the second append: a rewrite by rename
        monkeypatch.setattr(file_store, "write_atomically", lambda *a, **k: enospc())
        seq, reason = 2, NO_SPACE
    else:  # the cut is made, its sync fails: it is put back
        real_fsync = os.fsync

        def fsync(fd):
            if os.readlink(f"/proc/self/fd/{fd}") == str(log):
                eio()
            real_fsync(fd)

        monkeypatch.setattr(file_store.os, "fsync", fsync)
        seq, reason = 1, os.strerror(errno.EIO)
    with pytest.raises(StoreUnavailable) as raised:
        await store.truncate("s1", seq)
    monkeypatch.undo()
    assert str(raised.value) == f"cannot truncate {log}: {reason}"
    assert content(log) == before
    assert await store.truncations("s1") == []
    assert await fresh_head(store.root) == 3
    assert await store.head("s1") == 3
    truncation = await store.truncate("s1", seq, expected_head=3)
    assert (truncation.id, [e.seq for e in truncation.events]) == (1, list(range(seq + 1, 4)))
    assert await fresh_head(store.root) == seq


async def test_a_delete_that_cannot_unlink_the_log_leaves_the_session(store_with_one, monkeypatch):
    store = store_with_one
    monkeypatch.setattr(file_store.os, "unlink", eio)
    with pytest.raises(StoreUnavailable, match="cannot delete .*s1.jsonl: Input/output error"):
        await store.delete("s1")
    monkeypatch.undo()
    assert await fresh_head(store.root) == 2
    assert [i.id for i in await FileCheckpointer(store.root).list()] == ["s1"]


async def test_an_os_error_in_a_read_is_typed_with_the_path(store_with_one, monkeypatch):
    store = store_with_one
    monkeypatch.setattr(log_file.os, "pread", eio)
    with pytest.raises(StoreUnavailable, match="cannot read .*s1.jsonl: Input/output error"):
        await FileCheckpointer(store.root).read("s1")


# -- a read-only store


async def write_a_store(store) -> dict:
    """Two sessions, a truncation and a blob; what a reader should get back."""
    blob = await store.blobs.put(b"snapshot")
    await store.append("s1", [SessionStarted(workspace="/w"), UserPrompt(text="first")])
    await store.append("s1", [AssistantMessage(text="a"), AssistantMessage(text="b")])
    await store.truncate("s1", 3)
    await store.append("s2", [UserPrompt(text="second")])
    want = {
        "list": await store.list(),
        "read": await store.read("s1"),
        "since": await store.read("s1", 2),
        "head": await store.head("s1"),
        "truncations": await store.truncations("s1"),
        "blob": (blob, b"snapshot"),
    }
    await store.close()
    return want


async def check_reads(store, want: dict) -> None:
    assert await store.list() == want["list"]
    assert await store.read("s1") == want["read"]
    assert await store.read("s1", 2) == want["since"]
    assert await store.head("s1") == want["head"]
    assert await store.truncations("s1") == want["truncations"]
    assert await store.read("absent") == [] and await store.head("absent") == 0
    blob, data = want["blob"]
    assert await store.blobs.get(blob) == data


async def check_writes_refused(store, folder: Path, reason: str) -> None:
    writes = [
        lambda: store.append("s1", [UserPrompt(text="no")]),
        lambda: store.append("new", [UserPrompt(text="no")]),
        lambda: store.truncate("s1", 1),
        lambda: store.delete("s1"),
    ]
    for write in writes:
        with pytest.raises(StoreUnavailable) as raised:
            await write()
        assert str(folder) in str(raised.value) and reason in str(raised.value), raised.value
    with pytest.raises(StoreUnavailable, match=reason):
        async with store.turn_lease("s1"):
            pass


@linux_only
async def test_a_read_only_file_store_can_be_read_and_refuses_writes(read_only_view):
    src, view = read_only_view
    want = await write_a_store(FileCheckpointer(src / "store"))
    before = files_in(src)
    store = FileCheckpointer(view / "store")
    await check_reads(store, want)
    await check_writes_refused(store, view / "store", READ_ONLY)
    await check_reads(store, want)  # refused writes left this process's view intact
    await store.close()
    assert files_in(src) == before


@linux_only
async def test_a_read_only_store_without_locks_or_index_and_with_a_torn_tail(read_only_view):
    """Read without the lock: the torn tail is not there, and nothing is cut."""
    src, view = read_only_view
    want = await write_a_store(FileCheckpointer(src / "store"))
    shutil.rmtree(src / "store" / "locks")
    os.unlink(src / "store" / "index.jsonl")
    log = src / "store" / "sessions" / "s1.jsonl"
    whole = content(log)
    write_at_content_end(log, len(whole), b'{"batch":"1","crc":"0123')
    before = files_in(src)
    store = FileCheckpointer(view / "store")
    await check_reads(store, want)
    await store.close()
    assert files_in(src) == before


CHILD = """
import asyncio, concurrent.futures.thread, json, os, sys
import agent_host.session.store.sqlite
from agent_host.session import open_store
from agent_host.session.errors import StoreUnavailable
from agent_host.session.events import UserPrompt

async def main(url):
    store = open_store(url)
    got = {
        "list": [[i.id, i.head] for i in await store.list()],
        "read": [e.seq for e in await store.read("s1")],
        "head": await store.head("s1"),
        "truncations": [[t.id, t.seq] for t in await store.truncations("s1")],
    }
    try:
        await store.append("s1", [UserPrompt(text="no")])
        got["append"] = "returned"
    except StoreUnavailable as exc:
        got["append"] = str(exc)
    print(json.dumps(got))

os.setgid(65534)
os.setuid(65534)  # after every import: nobody may not read this interpreter's files
asyncio.run(main(sys.argv[1]))
"""


@linux_only
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the store to nobody")
@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_store_the_reader_may_not_write_can_be_read(backend):
    """Permission bits, not a read-only mount: EACCES rather than EROFS."""
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # tmp_path's parents shut nobody out
    try:
        folder.chmod(0o755)
        root = folder / "store"
        if backend == "file":
            url, want = str(root), await write_a_store(FileCheckpointer(root))
        else:
            root.mkdir()
            db = root / "store.db"
            url, want = f"sqlite://{db}", await write_a_store(SqliteCheckpointer(db))
        for path in [root, *root.rglob("*")]:
            os.chown(path, 65534, 65534)
            path.chmod(0o500 if path.is_dir() else 0o400)
        before = files_in(root)
        probe = subprocess.run(
            [sys.executable, "-c", CHILD.replace("asyncio.run(main(", "print(("), "."],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if probe.returncode != 0:
            pytest.skip(f"nobody cannot run this interpreter: {probe.stderr[-300:]}")
        child = subprocess.run(
            [sys.executable, "-c", CHILD, url], capture_output=True, text=True, timeout=60
        )
        assert child.returncode == 0, child.stderr
        got = json.loads(child.stdout)
        assert got["list"] == [[i.id, i.head] for i in want["list"]]
        assert got["read"] == [e.seq for e in want["read"]]
        assert got["head"] == want["head"]
        assert got["truncations"] == [[t.id, t.seq] for t in want["truncations"]]
        assert str(root) in got["append"] and os.strerror(errno.EACCES) in got["append"]
        assert files_in(root) == before
    finally:
        shutil.rmtree(folder)


# -- SQLite


@linux_only
async def test_a_read_only_sqlite_store_can_be_read_and_refuses_writes(read_only_view):
    src, view = read_only_view
    want = await write_a_store(SqliteCheckpointer(src / "store.db"))
    before = files_in(src)
    store = SqliteCheckpointer(view / "store.db")
    await check_reads(store, want)
    await check_writes_refused(store, view, READ_ONLY)
    await store.close()
    assert files_in(src) == before


@linux_only
async def test_a_read_only_sqlite_store_that_needs_migrating_says_so(read_only_view):
    src, view = read_only_view
    db = sqlite3.connect(src / "old.db")
    db.executescript(MIGRATIONS[0])
    db.execute("PRAGMA user_version = 1")
    db.close()
    with pytest.raises(StoreUnavailable, match=f"cannot migrate {view / 'old.db'}: {READ_ONLY}"):
        SqliteCheckpointer(view / "old.db")


@linux_only
async def test_a_missing_sqlite_store_in_a_read_only_folder(read_only_view):
    _, view = read_only_view
    with pytest.raises(StoreUnavailable, match=str(view / "none.db")):
        SqliteCheckpointer(view / "none.db")


@linux_only
async def test_sqlite_appends_on_a_full_disk_either_return_their_head_or_leave_nothing(
    small_disk,
):
    path = small_disk / "store.db"
    store = SqliteCheckpointer(path)
    last = await store.append("s1", [UserPrompt(text="go")])
    filler = fill(small_disk)
    failed = 0
    for n in range(200):
        try:
            last = await store.append("s1", [AssistantMessage(text=f"{n} " * 500)], last)
        except StoreUnavailable as exc:
            failed += 1
            assert str(path) in str(exc) and "full" in str(exc), exc
            if failed == 3:
                break
        assert await store.head("s1") == last
        assert [e.seq for e in await store.read("s1")] == list(range(1, last + 1))
    assert failed == 3, "the disk never filled up"
    filler.unlink()
    assert await store.append("s1", [UserPrompt(text="after")], last) == last + 1
    await store.close()
    again = SqliteCheckpointer(path)
    assert await again.head("s1") == last + 1
    await again.close()
