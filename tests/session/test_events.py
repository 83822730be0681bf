from __future__ import annotations

import orjson
import pytest

from agent_host.session import events as ev


def test_each_event_serialises_with_its_type_seq_and_ts():
    data = orjson.loads(
        ev.encode(ev.ToolCall(call_id="c", name="grep", arguments={"p": "x"}), 7, 2.5)
    )
    assert data == {
        "type": "tool_call",
        "seq": 7,
        "ts": 2.5,
        "call_id": "c",
        "name": "grep",
        "arguments": {"p": "x"},
    }


@pytest.mark.parametrize("cls", list(ev.EVENT_TYPES.values()), ids=lambda c: c.type)
def test_types_are_unique_snake_case(cls):
    assert cls.type and cls.type == cls.type.lower()
    assert ev.EVENT_TYPES[cls.type] is cls


def test_a_field_added_by_a_newer_version_is_tolerated():
    raw = b'{"type":"user_prompt","seq":1,"ts":1.0,"text":"hi","attachments":["x"]}'
    event = ev.decode(raw)
    assert event == ev.UserPrompt(seq=1, ts=1.0, text="hi")


def test_unknown_type_keeps_every_field_and_writes_back_unchanged():
    raw = {"type": "reasoning", "seq": 4, "ts": 3.0, "summary": "s", "nested": {"a": [1]}}
    event = ev.decode(orjson.dumps(raw))
    assert isinstance(event, ev.UnknownEvent)
    assert orjson.loads(ev.encode(event)) == raw


def test_stamp_sets_seq_and_ts_without_touching_the_original():
    original = ev.UserPrompt(text="x")
    stamped = ev.stamp(original, 3, 9.0)
    assert (stamped.seq, stamped.ts, stamped.text) == (3, 9.0, "x")
    assert (original.seq, original.ts) == (0, 0.0)
