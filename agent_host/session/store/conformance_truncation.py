"""The checkpointer contract: delete, truncate, and the truncations an undo puts back.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import pytest

from agent_host.session import (
    CheckpointConflictError,
    CheckpointNotFound,
    SessionNotFound,
)
from agent_host.session.events import (
    UserPrompt,
)
from agent_host.session.store.conformance_backends import turn

# -- delete


async def test_delete_removes_session_and_its_truncations(store):
    await store.append("s1", turn(1) + turn(2))
    await store.truncate("s1", 4)
    await store.append("keep", turn(1))
    await store.delete("s1")
    assert await store.head("s1") == 0
    assert await store.read("s1") == []
    assert await store.truncations("s1") == []
    assert [i.id for i in await store.list()] == ["keep"]
    assert await store.append("s1", [UserPrompt(text="again")]) == 1


async def test_delete_unknown_session_says_so(store):
    with pytest.raises(SessionNotFound, match="'ghost' not found"):
        await store.delete("ghost")


async def test_delete_is_durable(store, backend):
    await store.append("s1", turn(1))
    await store.delete("s1")
    reopened = backend.open()
    assert await reopened.list() == []
    assert await reopened.read("s1") == []


# -- truncate and undo


async def test_truncate_drops_later_events_and_keeps_them(store):
    await store.append("s1", turn(1) + turn(2) + turn(3))
    cut = await store.truncate("s1", 4)
    assert (cut.id, cut.seq) == (1, 4)
    assert [e.seq for e in cut.events] == list(range(5, 13))
    assert cut.events[0] == UserPrompt(seq=5, ts=cut.events[0].ts, text="prompt 2")
    assert await store.head("s1") == 4
    assert [e.seq for e in await store.read("s1")] == [1, 2, 3, 4]
    info = (await store.list())[0]
    assert (info.head, info.turns) == (4, 1)
    assert await store.append("s1", [UserPrompt(text="instead")]) == 5


async def test_truncations_are_kept_in_order_and_survive_reopen(store, backend):
    await store.append("s1", turn(1) + turn(2) + turn(3))
    await store.truncate("s1", 8)
    await store.append("s1", [UserPrompt(text="branch")])
    await store.truncate("s1", 4)
    cuts = await backend.open().truncations("s1")
    assert [(c.id, c.seq, len(c.events)) for c in cuts] == [(1, 8, 4), (2, 4, 5)]
    assert [e.text for e in cuts[1].events if isinstance(e, UserPrompt)] == [
        "prompt 2",
        "branch",
    ]


async def test_undo_of_a_truncation_restores_the_log_exactly(store):
    """What undo-restore does: re-append the removed events at their own seqs."""
    await store.append("s1", turn(1) + turn(2))
    original = await store.read("s1")
    cut = await store.truncate("s1", 4)
    assert await store.append("s1", cut.events, expected_head=cut.seq) == 8
    restored = await store.read("s1")
    assert [(type(e), e.seq) for e in restored] == [(type(e), e.seq) for e in original]
    assert [getattr(e, "text", None) for e in restored] == [
        getattr(e, "text", None) for e in original
    ]


async def test_truncate_to_head_or_zero(store):
    await store.append("s1", turn(1))
    same = await store.truncate("s1", 4)
    assert same.events == [] and await store.head("s1") == 4
    everything = await store.truncate("s1", 0)
    assert len(everything.events) == 4
    assert await store.head("s1") == 0
    assert await store.append("s1", [UserPrompt(text="fresh")]) == 1


async def test_truncate_refuses_bad_seqs_and_unknown_sessions(store):
    await store.append("s1", turn(1))
    for seq in (-1, 5, "2", 2.0):
        with pytest.raises(CheckpointNotFound, match="between 0 and the head"):
            await store.truncate("s1", seq)
    with pytest.raises(SessionNotFound):
        await store.truncate("ghost", 0)
    assert await store.head("s1") == 4
    assert await store.truncations("s1") == []


async def test_truncate_with_stale_head_conflicts(store):
    await store.append("s1", turn(1) + turn(2))
    with pytest.raises(CheckpointConflictError):
        await store.truncate("s1", 2, expected_head=4)
    assert await store.head("s1") == 8
    cut = await store.truncate("s1", 2, expected_head=8)
    assert len(cut.events) == 6
