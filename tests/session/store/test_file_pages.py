"""The file store's pages (list_page): read from this process's view of the session
index, which reads only the lines written since its last look, and falls back to
list() -- which repairs the index -- when the index cannot vouch for its answer."""

from __future__ import annotations

import orjson
import pytest

from agent_host.session.events import AssistantMessage, UserPrompt
from agent_host.session.store import file_index
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
