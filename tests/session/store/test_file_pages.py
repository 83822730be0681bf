"""The file store's pages (list_page): read from this process's view of the session
index, which reads only the lines written since its last look, and falls back to
list() -- which repairs the index -- when the index cannot vouch for its answer."""

from __future__ import annotations

import asyncio
from tempfile import TemporaryDirectory
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_host.session.events import AssistantMessage, UserPrompt
from agent_host.session.store import file_index, file_sync
from agent_host.session.store.file import FileCheckpointer


@pytest.fixture
async def store(tmp_path):
    store = FileCheckpointer(tmp_path / "store")
    for n in range(20):
        await store.append(f"s{n:02d}", [UserPrompt(text=f"p{n}")])
    yield store
    await store.close()


def ids(page) -> list[str]:
    return [i.id for i in page]


async def test_a_page_reads_only_the_index_lines_written_since_the_last_one(store, monkeypatch):
    assert ids(await store.list_page(3)) == ["s19", "s18", "s17"]
    size = store._index.path.stat().st_size
    await store.append("s05", [AssistantMessage(text="moves s05 up")])
    written = store._index.path.stat().st_size - size
    reads: list[int] = []
    real_pread = file_index.os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        reads.append(n)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(file_index.os, "pread", pread)
    assert ids(await store.list_page(3)) == ["s05", "s19", "s18"]
    assert reads == [written]


async def test_a_write_never_recorded_is_read_from_its_log_and_repaired(store, tmp_path):
    other = FileCheckpointer(tmp_path / "store")
    assert ids(await store.list_page(2)) == ["s19", "s18"]
    # A writer that announced a write to s03, wrote its log, and died before
    # recording it: the index's last word on s03 is "?".
    await other.append("s03", [AssistantMessage(text="recorded below, then hidden")])
    lines = other._index.path.read_bytes().splitlines(keepends=True)
    assert orjson.loads(lines[-1])[0] == "s03"
    other._index.path.write_bytes(b"".join(lines[:-1]))  # a new file: the view restarts
    page = await store.list_page(2)
    assert ids(page) == ["s03", "s19"] and page[0].head == 2
    last = orjson.loads(store._index.path.read_bytes().splitlines()[-1])
    assert last[0] == "s03"  # recorded by the page that read its log
    assert ids(await store.list_page(2)) == ["s03", "s19"]
    assert not store._listing.view.pending  # the next page came from the view
    await other.close()


async def test_a_damaged_index_is_rebuilt_by_a_page(store):
    assert ids(await store.list_page(2)) == ["s19", "s18"]
    with open(store._index.path, "ab") as f:
        f.write(b'["s07", 1.0, "not a row\n')
    await store.append("s07", [AssistantMessage(text="after the damage")])
    assert ids(await store.list_page(2)) == ["s07", "s19"]
    assert file_index.parse(store._index.path.read_bytes()) is not None


async def test_a_loose_index_is_compacted_by_a_page(store):
    for _ in range(60):
        await store.append("s00", [AssistantMessage(text="again")])
    loaded = store._index.load()
    assert loaded is not None and loaded.loose
    page = await store.list_page(25)
    assert ids(page)[0] == "s00" and len(page) == 20
    assert len(store._index.path.read_bytes().splitlines()) == 21  # the header, a row each
    assert not store._index.load().loose


async def test_a_deleted_session_leaves_the_pages(store):
    assert ids(await store.list_page(2)) == ["s19", "s18"]
    await store.delete("s19")
    page = await store.list_page(2)
    assert ids(page) == ["s18", "s17"]
    assert ids(await store.list_page(2, (page[-1].updated_at, page[-1].id))) == ["s16", "s15"]


# -- the index read from its end (format 2: see file_index)


def fresh_page(root, limit: int, after=None) -> list:
    """A page from a new store object, as a new process's first."""

    async def page():
        other = FileCheckpointer(root)
        try:
            return await other.list_page(limit, after)
        finally:
            await other.close()

    return asyncio.run(page())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["append", "append", "delete", "page"]), st.integers(0, 7)),
        max_size=30,
    ),
    limit=st.integers(1, 4),
)
def test_a_new_store_objects_first_page_is_the_kept_ones(ops, limit):
    """Over random writes and deletes, with a tail small enough that pages compact
    it along the way: every page a new store object reads first is the page a
    store kept open reads, and the one list() gives."""

    async def run(root) -> None:
        kept = FileCheckpointer(root)
        await kept.append("base", [UserPrompt(text="first")])
        try:
            for op, n in ops:
                sid = f"s{n}"
                if op == "append":
                    await kept.append(sid, [UserPrompt(text=f"to {sid}")])
                elif op == "delete" and await kept.head(sid):
                    await kept.delete(sid)
                elif op == "page":
                    await kept.list_page(limit)
                everything = await FileCheckpointer(root).list()
                after = None
                while True:
                    want = everything[:limit]
                    cold = await asyncio.to_thread(fresh_page, root, limit, after)
                    assert cold == want == await kept.list_page(limit, after)
                    if not want:
                        break
                    everything = everything[limit:]
                    after = (want[-1].updated_at, want[-1].id)
        finally:
            await kept.close()

    with TemporaryDirectory() as tmp, mock.patch.object(file_index, "TAIL_LIMIT", 700):
        asyncio.run(run(f"{tmp}/store"))


def test_a_format_1_index_is_read_then_rewritten_sorted(tmp_path):
    """An index an older version wrote (no header, unsorted, ``?`` and ``!`` lines)
    is read as a tail; past the tail's limit, the first page rewrites it."""
    root = tmp_path / "store"

    async def build() -> list:
        store = FileCheckpointer(root)
        for n in range(80):
            await store.append(f"s{n:03d}", [UserPrompt(text=f"p{n}")])
        await store.append("s010", [AssistantMessage(text="moves s010 up")])
        await store.delete("s079")
        await store.close()
        return await FileCheckpointer(root).list()

    everything = asyncio.run(build())
    path = root / "index.jsonl"
    # Lines as version 1 wrote them: no header; the one compaction so far undone.
    lines = [line for line in path.read_bytes().splitlines(keepends=True)[1:]]
    lines = lines[40:] + lines[:40]  # unsorted, as writes come
    path.write_bytes(b"".join(lines))
    assert not file_index.parse(path.read_bytes()).loose
    assert fresh_page(root, 5) == everything[:5]
    assert path.read_bytes() == b"".join(lines)  # read, not rewritten: not loose
    with mock.patch.object(file_index, "TAIL_LIMIT", 1000):
        assert fresh_page(root, 5) == everything[:5]
    data = path.read_bytes()
    assert data.startswith(b'["#",2,') and data.count(b"\n") == 1 + len(everything)
    cursor = (everything[9].updated_at, everything[9].id)
    assert fresh_page(root, 5, cursor) == everything[10:15]


def test_a_tail_past_its_limit_is_compacted_by_the_next_page(tmp_path):
    root = tmp_path / "store"

    async def writes(n: int) -> None:
        store = FileCheckpointer(root)
        for i in range(n):
            await store.append(f"s{i % 5}", [UserPrompt(text=f"p{i}")])
        await store.close()

    with mock.patch.object(file_index, "TAIL_LIMIT", 300):
        asyncio.run(writes(5))  # 10 lines, past 300 bytes
        fresh_page(root, 2)
        path = root / "index.jsonl"
        assert path.read_bytes().startswith(b'["#",2,')
        region = file_index.region_of(path.read_bytes().split(b"\n")[0] + b"\n")
        asyncio.run(writes(12))  # a tail of 24 lines
        assert path.stat().st_size - region.end > 300
        page = fresh_page(root, 3)
        assert [i.id for i in page] == ["s1", "s0", "s4"]
        data = path.read_bytes()
        region = file_index.region_of(data.split(b"\n")[0] + b"\n")
        assert region.lines == 5 and region.end == len(data)  # sorted, its tail empty


def test_a_torn_last_line_is_left_out_then_a_line_after_it_rebuilds(tmp_path):
    root = tmp_path / "store"

    async def build() -> list:
        store = FileCheckpointer(root)
        for n in range(6):
            await store.append(f"s{n}", [UserPrompt(text=f"p{n}")])
        await store.close()
        return await FileCheckpointer(root).list()

    everything = asyncio.run(build())
    path = root / "index.jsonl"
    whole = path.read_bytes()
    # A writer cut short (a kill, a full disk) after its "?": half its record.
    torn = whole + b'["?","s2"]\n' + b'["s2",1.0,9'
    path.write_bytes(torn)
    page = fresh_page(root, 3)
    assert page == [everything[0], everything[1], everything[2]]  # s2 repaired: unchanged
    assert [i.id for i in fresh_page(root, 6)] == [i.id for i in everything]
    # The next line runs into the torn one: damaged, rebuilt from the logs.
    path.write_bytes(torn + b'["?","s3"]\n')
    assert [i.id for i in fresh_page(root, 6)] == [i.id for i in everything]
    assert file_index.parse(path.read_bytes()) is not None


async def test_a_cold_start_finds_its_session_in_the_sorted_region(tmp_path, monkeypatch):
    """A long log's first read starts from its end when the index's record agrees:
    the record is found by the log's last time in the region, not by a fold."""
    monkeypatch.setattr(file_sync, "COLD_START_SIZE", 0)
    root = tmp_path / "store"
    store = FileCheckpointer(root)
    for n in range(40):
        await store.append(f"s{n:02d}", [UserPrompt(text=f"p{n}"), AssistantMessage(text="a")])
    await store.close()
    file_index.SessionIndex(root).rebuild(FileCheckpointer(root)._listing.records_from_logs)
    assert (root / "index.jsonl").read_bytes().startswith(b'["#",2,')
    cold = FileCheckpointer(root)
    await cold.append("s17", [UserPrompt(text="again")], expected_head=2)
    # Started from the index's record (a whole read folds the prompts too).
    assert cold._states["s17"].summary.prompts is None, "the cold start read the whole log"
    assert "s17" not in cold._listing.view.tail  # found in the region
    await cold.close()


async def test_a_loose_index_that_cannot_be_compacted_is_still_paged(store, monkeypatch):
    """A store this process cannot write: pages come from the loose index, and a
    failed compaction (a read of the whole index first) is not tried by each page."""
    for _ in range(60):
        await store.append("s00", [AssistantMessage(text="again")])
    tries: list[int] = []

    def read_only(self) -> None:
        tries.append(1)
        raise PermissionError(13, "Permission denied", str(self.path))

    monkeypatch.setattr(file_index.SessionIndex, "compact", read_only)
    for _ in range(3):
        page = await store.list_page(2)
        assert ids(page) == ["s00", "s19"]
    assert len(tries) == 1
    assert store._index.load().loose  # still loose: nothing was rewritten
