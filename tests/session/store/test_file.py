"""What only the file store promises: modes, the session index, repair on open."""

from __future__ import annotations

import os
import stat

import orjson
import pytest

from agent_host.session import FileCheckpointer, blob_codec, open_store
from agent_host.session.events import AssistantMessage, SessionStarted, UserPrompt
from agent_host.session.store import file_index, framing, log_file

from .logs import content, write_at_content_end


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "store"


async def test_files_are_private_to_the_user(root):
    store = FileCheckpointer(root)
    await store.append("s1", [UserPrompt(text="secret-ish")])
    await store.truncate("s1", 0)
    await store.blobs.put(b"file content")
    for folder in (root, root / "sessions", root / "truncated", root / "locks"):
        assert mode(folder) == 0o700, folder
    for path in (
        root / "sessions" / "s1.jsonl",
        root / "truncated" / "s1.jsonl",
        root / "locks" / "s1.lock",
        root / "index.jsonl",
    ):
        assert mode(path) == 0o600, path


async def test_log_is_json_lines_with_a_checksum_per_event(root):
    store = FileCheckpointer(root)
    await store.append("s1", [UserPrompt(text="hi"), AssistantMessage(text="yo")])
    lines = content(root / "sessions" / "s1.jsonl").splitlines()
    records = [orjson.loads(line) for line in lines]
    assert [r["event"]["type"] for r in records] == ["user_prompt", "assistant_message"]
    assert [r["event"]["seq"] for r in records] == [1, 2]
    assert all(len(r["crc"]) == 8 for r in records)
    # One append of two events: its first and last line.
    assert [r["batch"] for r in records] == ["s", "e"]


async def test_list_reads_the_index_not_the_logs(root, monkeypatch):
    store = FileCheckpointer(root)
    for n in range(5):
        await store.append(f"s{n}", [UserPrompt(text=f"p{n}")])

    def no_log_reads(*args, **kwargs):
        raise AssertionError("list() opened a session log")

    monkeypatch.setattr(framing, "scan", no_log_reads)
    infos = await FileCheckpointer(root).list()
    assert [i.id for i in infos] == ["s4", "s3", "s2", "s1", "s0"]


async def test_lost_index_is_rebuilt_from_the_logs(root):
    store = FileCheckpointer(root)
    await store.append("a", [UserPrompt(text="first"), AssistantMessage(text="x")])
    await store.append("b", [UserPrompt(text="second")])
    want = await store.list()
    (root / "index.jsonl").unlink()
    assert await FileCheckpointer(root).list() == want
    assert (root / "index.jsonl").exists()


async def test_damaged_index_is_rebuilt_from_the_logs(root):
    store = FileCheckpointer(root)
    await store.append("a", [UserPrompt(text="first")])
    await store.append("b", [UserPrompt(text="second")])
    want = await store.list()
    with open(root / "index.jsonl", "r+b") as f:
        f.seek(3)
        f.write(b"\xff\xfe garbage")
    assert await FileCheckpointer(root).list() == want


async def test_writer_that_died_between_log_and_index_is_repaired_by_list(root, monkeypatch):
    store = FileCheckpointer(root)
    await store.append("s1", [UserPrompt(text="one")])

    def die(self, session_id, summary):
        raise KeyboardInterrupt("killed after the log write")

    monkeypatch.setattr(file_index.SessionIndex, "record", die)
    with pytest.raises(KeyboardInterrupt):
        await store.append("s1", [UserPrompt(text="two"), AssistantMessage(text="x")])
    with pytest.raises(KeyboardInterrupt):
        await store.append("fresh", [UserPrompt(text="new session")])
    monkeypatch.undo()

    infos = {i.id: i for i in await FileCheckpointer(root).list()}
    assert (infos["s1"].head, infos["s1"].turns) == (3, 2)
    assert infos["fresh"].title == "new session"
    # The repair was written down: the next list needs no log.
    monkeypatch.setattr(framing, "scan", lambda *a, **k: pytest.fail("log read"))
    assert {i.id: i.head for i in await FileCheckpointer(root).list()} == {"s1": 3, "fresh": 1}


async def test_an_index_from_before_the_workspace_field_is_rebuilt(root):
    store = FileCheckpointer(root)
    await store.append("s1", [SessionStarted(workspace="/src/app"), UserPrompt(text="hi")])
    # What an older version wrote: rows of six fields, no workspace.
    (root / "index.jsonl").write_bytes(b'["s1",1.0,2.0,2,1,"hi"]\n')
    infos = await FileCheckpointer(root).list()
    assert [(i.id, i.head, i.workspace) for i in infos] == [("s1", 2, "/src/app")]
    header, *rows = content(root / "index.jsonl").splitlines()
    assert orjson.loads(header)[:2] == ["#", file_index.FORMAT]
    assert [len(orjson.loads(line)) for line in rows] == [7]


async def test_index_is_compacted_when_it_grows(root):
    store = FileCheckpointer(root)
    appends = 60  # two lines each: past the 100 lines a tail may hold over no region
    for n in range(appends):
        await store.append("a" if n % 2 else "b", [AssistantMessage(text=str(n))])
    loaded = store._index.load()
    assert loaded is not None and loaded.loose
    infos = await store.list()
    header, *rows = (root / "index.jsonl").read_bytes().splitlines()
    assert orjson.loads(header) == ["#", 2, sum(len(r) + 1 for r in rows), 2]
    assert [orjson.loads(r)[0] for r in rows] == [i.id for i in reversed(infos)]
    assert await store.list() == infos
    assert sum(i.head for i in infos) == appends


async def test_deleted_session_stays_deleted_in_a_rebuilt_index(root):
    store = FileCheckpointer(root)
    await store.append("gone", [UserPrompt(text="x")])
    await store.append("kept", [UserPrompt(text="y")])
    await store.delete("gone")
    (root / "index.jsonl").unlink()
    assert [i.id for i in await FileCheckpointer(root).list()] == ["kept"]


async def test_torn_tail_is_cut_and_kept_aside(root):
    store = FileCheckpointer(root)
    await store.append("s1", [UserPrompt(text="whole"), AssistantMessage(text="also whole")])
    log = root / "sessions" / "s1.jsonl"
    whole = content(log)
    (half,) = framing.frame_batch(
        [b'{"type":"user_prompt","seq":3,"ts":1.0,"text":"never acknowledged"}']
    )
    write_at_content_end(log, len(whole), half[: len(half) // 2])
    reopened = FileCheckpointer(root)
    assert [e.seq for e in await reopened.read("s1")] == [1, 2]
    assert log.read_bytes() == whole
    (kept,) = (root / "torn").iterdir()
    assert kept.read_bytes() == half[: len(half) // 2]
    assert await reopened.append("s1", [UserPrompt(text="next")]) == 3


async def test_appends_write_over_zeros_and_grow_the_file_a_stretch_at_a_time(root):
    """Most appends change no file size (so fdatasync commits no metadata)."""
    store = FileCheckpointer(root)
    log = root / "sessions" / "s1.jsonl"
    sizes = []
    for n in range(40):
        await store.append("s1", [UserPrompt(text=f"prompt {n} " + "x" * 200)])
        sizes.append(log.stat().st_size)
        assert sizes[-1] % log_file.PAGE == 0
        assert len(content(log)) < sizes[-1] <= len(content(log)) * 9 // 8 + 2 * log_file.PAGE
    assert len(set(sizes)) < 10  # grew 40 appends in under 10 steps
    assert sizes[0] == log_file.PAGE  # a small log stays in its one page
    for reader in (store, FileCheckpointer(root)):  # this process and a fresh one
        assert [e.text for e in await reader.read("s1")] == [
            f"prompt {n} " + "x" * 200 for n in range(40)
        ]
    assert await FileCheckpointer(root).append("s1", [UserPrompt(text="41")]) == 41
    assert [e.seq for e in await store.read("s1", since_seq=39)] == [40, 41]


async def test_stray_bytes_after_zeros_are_a_torn_tail(root):
    """After a power cut a later page of a write may reach the disk and an earlier
    one not: zeros, then bytes. They are cut and kept aside like any torn tail."""
    store = FileCheckpointer(root)
    await store.append("s1", [UserPrompt(text="kept")])
    log = root / "sessions" / "s1.jsonl"
    whole = content(log)
    stray = b'xt":"lost"}}\n'
    write_at_content_end(log, len(whole), bytes(100) + stray)
    reopened = FileCheckpointer(root)
    assert [e.text for e in await reopened.read("s1")] == ["kept"]
    assert log.read_bytes() == whole
    (kept,) = (root / "torn").iterdir()
    assert kept.read_bytes() == bytes(100) + stray
    assert await reopened.append("s1", [UserPrompt(text="next")]) == 2
    assert [e.text for e in await FileCheckpointer(root).read("s1")] == ["kept", "next"]


async def test_damage_before_the_tail_is_reported_not_cut(root):
    store = FileCheckpointer(root)
    await store.append("s1", [UserPrompt(text="one"), UserPrompt(text="two")])
    await store.append("s1", [UserPrompt(text="three")])
    log = root / "sessions" / "s1.jsonl"
    data = bytearray(content(log))
    data[40] ^= 0x01
    log.write_bytes(bytes(data))
    from agent_host.session import CorruptLogError

    with pytest.raises(CorruptLogError, match="s1.jsonl") as caught:
        await FileCheckpointer(root).read("s1")
    assert "record 1" in str(caught.value) and "later appends follow" in str(caught.value)
    assert log.read_bytes() == bytes(data)


async def test_open_store_accepts_plain_paths_and_file_urls(root):
    for url in (str(root), root.as_uri()):
        store = open_store(url)
        assert isinstance(store, FileCheckpointer)
        assert store.root == root


async def test_blob_files_are_whole_and_private(root):
    store = FileCheckpointer(root)
    blob = await store.blobs.put(b"x" * 10_000)
    path = root / "blobs" / blob[:2] / blob[2:]
    assert blob_codec.decode(blob, path.read_bytes()) == b"x" * 10_000
    assert mode(path) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


async def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path):
    root = tmp_path / "typo"
    store = FileCheckpointer(root)
    assert await store.list() == []
    assert await store.read("s1") == []
    assert await store.head("s1") == 0
    assert await store.truncations("s1") == []
    assert not root.exists()


def test_a_lock_held_elsewhere_times_out_with_a_clear_error(tmp_path):
    import subprocess
    import sys
    import textwrap

    from agent_host.session import StoreBusy
    from agent_host.session.store import locking

    path = str(tmp_path / "s.lock")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from agent_host.session.store import locking
                with locking.hold({path!r}):
                    print("held", flush=True)
                    sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy, match="another agent-host process"):
            with locking.hold(path, timeout=0.2):
                pass
    finally:
        holder.communicate("", timeout=10)
    with locking.hold(path, timeout=1):  # released when its holder exits
        pass


async def test_lines_written_during_an_index_rewrite_are_rechecked(root):
    store = FileCheckpointer(root)
    await store.append("early", [UserPrompt(text="before the rewrite")])
    index = file_index.SessionIndex(root)
    racing = file_index.SessionIndex(root)

    def records() -> bytes:
        # Another writer records a session while the rewrite is being built.
        racing.record("late", store._states["early"].summary)
        return file_index.info_line(store._states["early"].summary.info("early"))

    index.rebuild(records)
    sessions, pending, _ = index.load()
    assert "late" in pending
    # list() settles it from the logs: "late" has no log, "early" is intact.
    assert [i.id for i in await FileCheckpointer(root).list()] == ["early"]


async def test_truncating_inside_an_append_keeps_its_first_events(root):
    """A cut inside an append re-frames the kept part so it stays committed."""
    store = FileCheckpointer(root)
    await store.append(
        "s1", [UserPrompt(text="a"), AssistantMessage(text="b"), AssistantMessage(text="c")]
    )
    inode = (root / "sessions" / "s1.jsonl").stat().st_ino
    cut = await store.truncate("s1", 2)
    assert [e.text for e in cut.events] == ["c"]
    assert (root / "sessions" / "s1.jsonl").stat().st_ino != inode  # replaced whole
    reopened = FileCheckpointer(root)
    assert [e.text for e in await reopened.read("s1")] == ["a", "b"]
    assert not (root / "torn").exists()
    assert await reopened.append("s1", [UserPrompt(text="d")], expected_head=2) == 3
    assert [e.text for e in await store.read("s1")] == ["a", "b", "d"]


async def test_a_log_spanning_many_read_windows_reads_whole_and_repairs(root):
    """Logs are parsed a window (framing.WINDOW) at a time: the seams must not show."""
    store = FileCheckpointer(root)
    text = "x" * 3000
    for n in range(3 * framing.WINDOW // 6000 + 10):
        await store.append("s1", [UserPrompt(text=f"{n}"), AssistantMessage(text=text)] * 2)
    head = await store.head("s1")
    log = root / "sessions" / "s1.jsonl"
    assert log.stat().st_size > 3 * framing.WINDOW
    with open(log, "ab") as f:
        f.write(b'{"batch":"s","crc":"00000000","event":{"type":"user_pr')
    events = await FileCheckpointer(root).read("s1")
    assert [e.seq for e in events] == list(range(1, head + 1))
    assert [e.seq for e in await FileCheckpointer(root).read("s1", since_seq=head - 3)] == [
        head - 2,
        head - 1,
        head,
    ]


async def test_a_session_deleted_by_another_process_reads_as_gone(root):
    """This process knew the log (and so skips checking it exists): it must still
    see it gone, and a new append starts the session afresh."""
    ours, theirs = FileCheckpointer(root), FileCheckpointer(root)
    await ours.append("s1", [UserPrompt(text="one"), UserPrompt(text="two")])
    await theirs.delete("s1")
    assert await ours.read("s1") == []
    assert await ours.head("s1") == 0
    assert await ours.append("s1", [UserPrompt(text="again")]) == 1
    assert [e.text for e in await theirs.read("s1")] == ["again"]
