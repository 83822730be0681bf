"""Folding a session's events into the model's view: OpenAI chat messages."""

from __future__ import annotations

import json

from agent_host.session.conversation import INTERRUPTED, to_messages
from agent_host.session.events import (
    AssistantMessage,
    Compaction,
    FileSnapshot,
    ToolCall,
    ToolResult,
    TurnEnd,
    Usage,
    UserPrompt,
)


def numbered(*events):
    for seq, event in enumerate(events, 1):
        event.seq = seq
    return list(events)


def test_a_turn_with_tools_becomes_chat_messages():
    events = numbered(
        UserPrompt(text="fix a.py"),
        AssistantMessage(text="Reading it."),
        ToolCall(call_id="c1", name="read_file", arguments={"path": "a.py"}),
        ToolCall(call_id="c2", name="grep", arguments={"pattern": "x"}),
        ToolResult(call_id="c1", output="print(1)"),
        ToolResult(call_id="c2", output="", is_error=True),
        FileSnapshot(path="a.py", before=None, after=None),
        Usage(input_tokens=1, output_tokens=1),
        AssistantMessage(text="Done."),
        TurnEnd(stop_reason="end_turn"),
    )
    messages = to_messages(events)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    calls = messages[1]["tool_calls"]
    assert [c["id"] for c in calls] == ["c1", "c2"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "a.py"}
    assert calls[0]["function"]["name"] == "read_file"
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "print(1)"}


def test_tool_calls_without_text_get_an_empty_assistant_message():
    events = numbered(
        UserPrompt(text="go"),
        ToolCall(call_id="c1", name="list_files"),
        ToolResult(call_id="c1", output="a.py"),
        ToolCall(call_id="c2", name="read_file"),
        ToolResult(call_id="c2", output="x"),
    )
    messages = to_messages(events)
    assert [(m["role"], m.get("content")) for m in messages] == [
        ("user", "go"),
        ("assistant", None),
        ("tool", "a.py"),
        ("assistant", None),
        ("tool", "x"),
    ]


def test_a_call_left_without_result_is_answered():
    """A crash or cancel mid-tool must not leave the model an unanswered call."""
    events = numbered(
        UserPrompt(text="go"),
        AssistantMessage(text="running"),
        ToolCall(call_id="c1", name="run_command"),
        UserPrompt(text="next"),
        ToolCall(call_id="c2", name="run_command"),
    )
    messages = to_messages(events)
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("c1", INTERRUPTED),
        ("c2", INTERRUPTED),
    ]
    assert messages[3] == {"role": "user", "content": "next"}


def test_compaction_replaces_the_range_it_summarises():
    events = numbered(
        UserPrompt(text="one"),
        AssistantMessage(text="a1"),
        UserPrompt(text="two"),
        AssistantMessage(text="a2"),
        UserPrompt(text="three"),
        AssistantMessage(text="a3"),
    )
    events.append(
        Compaction(
            seq=7,
            summary="did one and two",
            first_seq=1,
            last_seq=4,
            tokens_before=9,
            tokens_after=3,
        )
    )
    messages = to_messages(events)
    assert messages[0]["role"] == "user"
    assert "did one and two" in messages[0]["content"]
    assert [m["content"] for m in messages[1:]] == ["three", "a3"]


def test_results_whose_call_is_unknown_are_dropped():
    events = numbered(UserPrompt(text="go"), ToolResult(call_id="ghost", output="?"))
    assert to_messages(events) == [{"role": "user", "content": "go"}]
