"""The file store's cold start (a long log it has not read is first read from its
end, with the index's record of the session): the whole store contract holds with
every log read so, and what a cold start cannot settle goes back to the log."""

from __future__ import annotations

import pytest

from agent_host.session import events as ev
from agent_host.session.store import file_sync, open_store
from agent_host.session.store.conformance import *  # noqa: F403 - the checks, run again
from agent_host.session.store.conformance import FACTORIES, Backend
from agent_host.session.store.summary import summarize


@pytest.fixture
def backend(tmp_path, monkeypatch) -> Backend:
    """The file store with every log, however short, started cold from its end."""
    monkeypatch.setattr(file_sync, "COLD_START_SIZE", 0)
    return FACTORIES["file"](tmp_path)


SID = "cold"


def turn(i: int) -> list[ev.Event]:
    return [
        ev.UserPrompt(text=f"prompt {i}"),
        ev.ToolCall(call_id=f"c{i}", name="read_file", arguments={"path": "a"}),
        ev.ToolResult(call_id=f"c{i}", output="x" * 8000),
        ev.AssistantMessage(text=f"answer {i}"),
        ev.TurnEnd(stop_reason="end_turn"),
    ]


@pytest.fixture
async def long_log(tmp_path) -> str:
    """A session whose log is longer than COLD_START_SIZE; its store's path."""
    path = str(tmp_path / "store")
    store = open_store(path)
    for start in range(0, 150, 50):
        await store.append(SID, [e for i in range(start, start + 50) for e in turn(i)])
    await store.close()
    size = (tmp_path / "store" / "sessions" / f"{SID}.jsonl").stat().st_size
    assert size > file_sync.COLD_START_SIZE
    return path


async def whole(path: str) -> list[ev.Event]:
    store = open_store(path)
    try:
        await store.read(SID)  # a read from seq 0 reads the whole log, never cold
        return await store.read(SID)
    finally:
        await store.close()


async def test_a_cold_append_reads_the_end_and_keeps_the_log_whole(long_log):
    before = await whole(long_log)
    store = open_store(long_log)
    head = await store.append(SID, turn(999), expected_head=len(before))
    state = store._states[SID]
    assert state.first > 0, "the append read the whole log"
    assert [e.seq for e in await store.read(SID, since_seq=head - 7)] == list(
        range(head - 6, head + 1)
    )
    # Reading further back than the cold start saw reads the whole log.
    assert await store.read(SID, since_seq=3) == (await whole(long_log))[3:]
    await store.close()
    after = await whole(long_log)
    assert after[: len(before)] == before and len(after) == head
    [info] = await open_store(long_log).list()
    assert (info.head, info.turns) == (head, 151)


async def test_a_cold_restore_append_folds_the_turns_from_the_log(long_log):
    store = open_store(long_log)
    await store.append(SID, [ev.Restore(to_seq=5 * 100, conversation=True, files=[])])
    await store.close()
    events = await whole(long_log)
    [info] = await open_store(long_log).list()
    assert info.turns == summarize(events).turns == 100


async def test_a_restore_another_process_appended_is_folded_from_the_log(long_log):
    mine, theirs = open_store(long_log), open_store(long_log)
    await mine.append(SID, turn(500))
    assert mine._states[SID].first > 0
    await theirs.append(SID, [ev.Restore(to_seq=10, conversation=True, files=[])])
    await mine.append(SID, turn(501))
    await mine.close()
    await theirs.close()
    [info] = await open_store(long_log).list()
    assert info.turns == summarize(await whole(long_log)).turns == 3


async def test_a_cold_truncate_reads_the_whole_log(long_log):
    store = open_store(long_log)
    await store.head(SID)
    cut = await store.truncate(SID, 10)
    assert [e.seq for e in cut.events] == list(range(11, 751))
    await store.close()
    assert [e.seq for e in await whole(long_log)] == list(range(1, 11))


@pytest.mark.parametrize("index", ["missing", "stale", "pending"])
async def test_an_index_that_disagrees_with_the_log_sends_the_start_to_the_log(
    long_log, tmp_path, index
):
    index_path = tmp_path / "store" / "index.jsonl"
    if index == "missing":
        index_path.unlink()
    else:
        lines = index_path.read_bytes().splitlines(keepends=True)
        if index == "stale":  # the last record lost: the index says an older head
            index_path.write_bytes(b"".join(lines[:-1]))
        else:
            index_path.write_bytes(b"".join(lines) + b'["?","cold"]\n')
    store = open_store(long_log)
    head = await store.append(SID, turn(7))
    assert store._states[SID].first == 0, "a cold start trusted an index that disagrees"
    await store.close()
    assert head == 755 and len(await whole(long_log)) == 755
