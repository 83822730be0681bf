"""The resume-snapshot part of the checkpointer contract (conformance re-exports it).

A store keeps a session's resume snapshot (session.resume_snapshot) and the
segments appended after it, or keeps none at all (every resume folds the log):
then ``read_snapshot`` gives None and ``append_snapshot`` None, whatever was
written. One that keeps them gives back the snapshot, then its segments in the
order appended; writing the snapshot whole drops them; a segment with no snapshot
to follow is not kept. The engine's side -- a crash between a segment and the
log's head, a torn segment -- is checked here on every backend too.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

from typing import Any

from agent_host.session import resume_snapshot
from agent_host.session.conversation import MessageFold
from agent_host.session.events import AssistantMessage, ToolCall, ToolResult, UserPrompt
from agent_host.session.resume_snapshot import HeadMark

_SID = "snap"


def _turn(n: int) -> list:
    return [
        UserPrompt(text=f"prompt {n}"),
        ToolCall(call_id=f"c{n}", name="read_file", arguments={"path": "a.py"}),
        ToolResult(call_id=f"c{n}", output=f"result {n} " + "x" * 50),
        AssistantMessage(text=f"answer {n}"),
    ]


# The snapshot calls are optional parts of a store (StoreBase has them): ``Any``.


async def _keeps_snapshots(store: Any) -> bool:
    """Whether the store keeps snapshots; one that does not keeps no segment either."""
    await store.append(_SID, _turn(0))
    await store.write_snapshot(_SID, 4, b"base")
    if await store.read_snapshot(_SID) is not None:
        return True
    assert await store.append_snapshot(_SID, b"segment") is None
    assert await store.read_snapshot(_SID) is None
    return False


async def test_segments_follow_the_snapshot_in_order(store, backend):
    if not await _keeps_snapshots(store):
        return
    assert await store.append_snapshot(_SID, b"-one") == (1, 4, 4)
    assert await store.append_snapshot(_SID, b"-two!") == (2, 9, 4)
    data, events = await store.read_snapshot(_SID)
    assert data == b"base-one-two!" and events[0].seq == 4
    # A header read is the snapshot's first bytes, never a segment's.
    data, _ = await store.read_snapshot(_SID, 3)
    assert data == b"bas"
    if backend.durable:
        data, _ = await backend.open().read_snapshot(_SID)
        assert data == b"base-one-two!"


async def test_writing_the_snapshot_whole_drops_its_segments(store, backend):
    if not await _keeps_snapshots(store):
        return
    await store.append_snapshot(_SID, b"-one")
    await store.append(_SID, _turn(1))
    await store.write_snapshot(_SID, 8, b"folded")
    data, events = await store.read_snapshot(_SID)
    assert data == b"folded" and events[0].seq == 8
    assert await store.append_snapshot(_SID, b"+1") == (1, 2, 6)
    if backend.durable:
        data, _ = await backend.open().read_snapshot(_SID)
        assert data == b"folded+1"


async def test_a_segment_without_a_snapshot_is_not_kept(store):
    await store.append(_SID, _turn(0))
    assert await store.append_snapshot(_SID, b"-one") is None
    assert await store.append_snapshot("nobody", b"-one") is None
    assert await store.read_snapshot(_SID) is None
    await store.write_snapshot(_SID, 4, b"base")
    found = await store.read_snapshot(_SID)
    assert found is None or found[0] == b"base"


async def test_deleting_a_session_drops_its_segments(store):
    if not await _keeps_snapshots(store):
        return
    await store.append_snapshot(_SID, b"-one")
    await store.delete(_SID)
    await store.append(_SID, _turn(0))
    assert await store.read_snapshot(_SID) is None
    await store.write_snapshot(_SID, 4, b"base")
    data, _ = await store.read_snapshot(_SID)
    assert data == b"base"


# -- the engine's snapshots on the store: base, segments, crashes between


async def _fold_upto(store: Any, seq: int) -> tuple[MessageFold, list]:
    events = (await store.read(_SID))[:seq]
    fold = MessageFold()
    fold.extend(events)
    return fold, events


async def _base_and_segments(store: Any, turns: int) -> list[HeadMark]:
    """A snapshot after turn 0, then a turn and a segment each: the marks written."""
    await store.append(_SID, _turn(0))
    fold, events = await _fold_upto(store, 4)
    data = resume_snapshot.snapshot_of(events, events, fold)
    assert data is not None
    await store.write_snapshot(_SID, 4, data)
    marks = [HeadMark.of(events[-1])]
    for n in range(1, turns + 1):
        kept = len(fold.messages)
        await store.append(_SID, _turn(n))
        newer = await store.read(_SID, since_seq=marks[-1].seq)
        fold.extend(newer)
        segment = resume_snapshot.segment_of(marks[-1], HeadMark.of(newer[-1]), fold, kept)
        await store.append_snapshot(_SID, segment.encode())
        marks.append(segment.head)
    return marks


async def _resumed_messages(store: Any) -> tuple[list, int] | None:
    """The conversation a resume reads from the snapshot (its segments applied and
    the log's later events folded on top) and how many events the segments folded."""
    loaded = await resume_snapshot.load(store, _SID, body=True)
    if loaded is None:
        return None
    assert loaded.fold is not None
    loaded.fold.extend(loaded.tail[loaded.covered :])
    return loaded.fold.messages, loaded.covered


async def _whole_log_messages(store: Any) -> list:
    fold = MessageFold()
    fold.extend(await store.read(_SID))
    return fold.messages


async def test_a_resume_applies_every_segment(store):
    if not await _keeps_snapshots(store):
        return
    await store.delete(_SID)
    await _base_and_segments(store, 3)
    found = await _resumed_messages(store)
    assert found is not None
    messages, covered = found
    assert covered == 12, "the segments were not applied"
    assert messages == await _whole_log_messages(store)


async def test_a_crash_between_the_log_and_the_segment_folds_the_rest(store):
    """The log's events are durable first: a crash before the turn's segment was
    appended leaves them after the last segment, folded on top."""
    if not await _keeps_snapshots(store):
        return
    await store.delete(_SID)
    await _base_and_segments(store, 2)
    await store.append(_SID, _turn(3))  # its segment never written
    messages, covered = await _resumed_messages(store) or ([], -1)
    assert covered == 8
    assert messages == await _whole_log_messages(store)


async def test_a_torn_segment_folds_the_log_with_a_warning(store, caplog):
    if not await _keeps_snapshots(store):
        return
    await store.delete(_SID)
    marks = await _base_and_segments(store, 1)
    await store.append(_SID, _turn(2))
    fold = MessageFold()
    fold.extend(await store.read(_SID))
    segment = resume_snapshot.segment_of(
        marks[-1], HeadMark.of((await store.read(_SID))[-1]), fold, 0
    )
    await store.append_snapshot(_SID, segment.encode()[:-5])  # a crash mid-write
    assert await resume_snapshot.load(store, _SID, body=True) is None
    assert "resume snapshot is not used" in caplog.text
    # A header read (a resume) still uses the snapshot, the log after it on top.
    loaded = await resume_snapshot.load(store, _SID)
    assert loaded is not None and loaded.header.head == marks[0]


async def test_segments_the_log_no_longer_has_are_not_applied(store):
    """A log cut back (a restore) past a segment's head, then grown again: that
    segment and the ones after it describe events no longer there."""
    if not await _keeps_snapshots(store):
        return
    await store.delete(_SID)
    await _base_and_segments(store, 3)
    await store.truncate(_SID, 8)
    await store.append(_SID, _turn(9))
    messages, covered = await _resumed_messages(store) or ([], -1)
    assert covered == 4, "a segment past the cut was applied"
    assert messages == await _whole_log_messages(store)
