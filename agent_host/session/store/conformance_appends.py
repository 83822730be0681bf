"""The checkpointer contract: appends and reads -- seqs, conflicts on the expected
head, a batch written whole or not at all, and payloads that round-trip exactly.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import attrs
import pytest

from agent_host.session import (
    CheckpointConflictError,
)
from agent_host.session.events import (
    AssistantMessage,
    FileSnapshot,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnEnd,
    UnknownEvent,
    Usage,
    UserPrompt,
)
from agent_host.session.store.conformance_backends import turn

# -- the checks


async def test_append_assigns_gapless_seqs_and_timestamps(store):
    assert await store.append("s1", turn(1)) == 4
    assert await store.append("s1", turn(2)) == 8
    events = await store.read("s1")
    assert [e.seq for e in events] == list(range(1, 9))
    assert all(e.ts > 1_600_000_000 for e in events)
    assert [e.ts for e in events] == sorted(e.ts for e in events)
    assert [type(e) for e in events[:4]] == [UserPrompt, ToolCall, ToolResult, AssistantMessage]
    assert events[1].arguments == {"path": "a.py"}
    assert await store.head("s1") == 8


async def test_read_since_seq_returns_only_later_events(store):
    await store.append("s1", turn(1) + turn(2))
    assert [e.seq for e in await store.read("s1", since_seq=5)] == [6, 7, 8]
    assert await store.read("s1", since_seq=8) == []
    assert await store.read("s1", since_seq=100) == []
    assert [e.seq for e in await store.read("s1", since_seq=0)] == list(range(1, 9))


async def test_unknown_session_is_empty_not_an_error(store):
    assert await store.head("never") == 0
    assert await store.read("never") == []
    assert await store.list() == []


async def test_append_of_nothing_changes_nothing(store):
    assert await store.append("s1", []) == 0
    assert await store.list() == []
    await store.append("s1", turn(1))
    assert await store.append("s1", [], expected_head=4) == 4
    with pytest.raises(CheckpointConflictError):
        await store.append("s1", [], expected_head=3)


async def test_sessions_are_independent(store):
    await store.append("a", turn(1))
    await store.append("b", [UserPrompt(text="other")])
    assert await store.head("a") == 4
    assert [e.text for e in await store.read("b")] == ["other"]


async def test_events_survive_reopening_the_store(store, backend):
    await store.append("s1", turn(1))
    reopened = backend.open()
    assert [e.seq for e in await reopened.read("s1")] == [1, 2, 3, 4]
    assert await reopened.append("s1", turn(2), expected_head=4) == 8
    assert await store.head("s1") == 8


# -- atomicity and conflicts


class _Unwritable:
    """A value no encoder can write: the events module writes odd values of models
    and tools in some form (a lone surrogate escaped), but not this."""

    def __str__(self) -> str:
        raise ValueError("cannot be written")


async def test_batch_with_an_unencodable_event_writes_nothing(store):
    await store.append("s1", turn(1))
    bad = turn(2)
    bad[2] = ToolResult(call_id="c2", output=_Unwritable())
    with pytest.raises(Exception):  # noqa: B017 - whichever encoding error, nothing lands
        await store.append("s1", bad)
    assert await store.head("s1") == 4
    assert len(await store.read("s1")) == 4
    assert await store.append("s1", turn(3)) == 8


async def test_an_odd_value_from_a_model_or_tool_is_stored_not_refused(store):
    odd = turn(1)
    odd[2] = ToolResult(call_id="c1", output="\ud800 lone surrogate")
    assert await store.append("s1", odd) == 4
    assert (await store.read("s1"))[2].output == "\\ud800 lone surrogate"


async def test_batch_with_a_non_event_is_refused_whole(store):
    with pytest.raises(TypeError, match="Event"):
        await store.append("s1", [UserPrompt(text="ok"), {"type": "user_prompt"}])
    assert await store.head("s1") == 0


async def test_stale_expected_head_conflicts_and_writes_nothing(store):
    assert await store.append("s1", turn(1), expected_head=0) == 4
    with pytest.raises(CheckpointConflictError) as caught:
        await store.append("s1", turn(2), expected_head=2)
    assert caught.value.expected_head == 2
    assert caught.value.actual_head == 4
    assert "s1" in str(caught.value) and "Reload" in str(caught.value)
    assert await store.head("s1") == 4
    assert await store.append("s1", turn(2), expected_head=4) == 8


async def test_expected_head_zero_refuses_an_existing_session(store):
    await store.append("s1", turn(1))
    with pytest.raises(CheckpointConflictError):
        await store.append("s1", turn(2), expected_head=0)


async def test_expected_head_on_unknown_session_must_be_zero(store):
    with pytest.raises(CheckpointConflictError):
        await store.append("new", turn(1), expected_head=3)
    assert await store.head("new") == 0


# -- payloads


async def test_unicode_round_trips(store):
    text = "héllo — 你好 — 🦀🚀 — \u0000 nul — \u202e rtl — \U0010ffff"
    await store.append("s1", [UserPrompt(text=text), AssistantMessage(text=text[::-1])])
    events = await store.read("s1")
    assert events[0].text == text
    assert events[1].text == text[::-1]
    assert (await store.list())[0].title.startswith("héllo")


async def test_one_megabyte_event_round_trips(store, backend):
    big = "".join(chr(0x41 + i % 26) for i in range(1024 * 1024))
    await store.append("s1", [UserPrompt(text="go"), ToolResult(call_id="c", output=big)])
    await store.append("s1", [AssistantMessage(text="after")])
    events = await backend.open().read("s1")
    assert events[1].output == big
    assert events[2].text == "after"
    assert [e.seq for e in await store.read("s1", since_seq=1)] == [2, 3]


async def test_every_event_type_round_trips(store):
    written = [
        SessionStarted(workspace="/ws", model="openai/gpt-4.1-mini", title="t"),
        UserPrompt(text="p"),
        AssistantMessage(text="a"),
        ToolCall(call_id="c", name="write_file", arguments={"path": "a.py", "n": [1, 2]}),
        ToolResult(call_id="c", output="err", is_error=True),
        FileSnapshot(path="a.py", before=None, after="ab" * 32, buffer_before="cd" * 32),
        Usage(input_tokens=10, output_tokens=5, cost=0.25, model="m"),
        TurnEnd(stop_reason="end_turn"),
    ]
    await store.append("s1", written)
    for seq, (want, got) in enumerate(zip(written, await store.read("s1"), strict=True), 1):
        assert got.seq == seq
        assert type(got) is type(want)
        want_fields = {k: v for k, v in _fields(want).items() if k not in ("seq", "ts")}
        assert {k: v for k, v in _fields(got).items() if k not in ("seq", "ts")} == want_fields


async def test_unknown_event_types_pass_through(store, backend):
    future = UnknownEvent(kind="agent_thought", data={"text": "hmm", "tokens": [1, 2]})
    await store.append("s1", [UserPrompt(text="p"), future, AssistantMessage(text="a")])
    got = (await backend.open().read("s1"))[1]
    assert isinstance(got, UnknownEvent)
    assert (got.seq, got.kind, got.data) == (2, "agent_thought", {"text": "hmm", "tokens": [1, 2]})
    cut = await store.truncate("s1", 1)
    assert isinstance(cut.events[0], UnknownEvent)
    assert cut.events[0].data == {"text": "hmm", "tokens": [1, 2]}
    (kept,) = await backend.open().truncations("s1")
    assert kept.events[0].kind == "agent_thought"


def _fields(event) -> dict:
    return attrs.asdict(event)
