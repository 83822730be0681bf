"""The model's view of a session, folded from its events as OpenAI chat messages.

Every tool call in the result has a result: a call whose result never made it
into the log (a crash or a cancel mid-tool) gets one saying so, because the
providers reject a conversation with an unanswered call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from .events import AssistantMessage, Compaction, Event, ToolCall, ToolResult, UserPrompt

INTERRUPTED = "[tool call interrupted before it returned a result]"


def to_messages(events: Iterable[Event]) -> list[dict[str, Any]]:
    """OpenAI chat-format messages for ``events``, in order.

    A ``Compaction`` replaces the messages of the events it covers with its summary.
    """
    return messages_with_seqs(events)[0]


def messages_with_seqs(events: Iterable[Event]) -> tuple[list[dict[str, Any]], list[int]]:
    """:func:`to_messages`, and for each message the seq of the event that opened it."""
    messages: list[dict[str, Any]] = []
    seqs: list[int] = []  # the seq of the event that opened each message
    open_calls: dict[str, int] = {}  # call id -> index of the message holding it
    for event in events:
        kind = type(event)
        if kind is UserPrompt:
            if open_calls:
                _answer_open_calls(messages, seqs, open_calls)
            messages.append({"role": "user", "content": event.text})
            seqs.append(event.seq)
        elif kind is AssistantMessage:
            if open_calls:
                _answer_open_calls(messages, seqs, open_calls)
            messages.append({"role": "assistant", "content": event.text})
            seqs.append(event.seq)
        elif kind is ToolCall:
            call = {
                "id": event.call_id,
                "type": "function",
                "function": {
                    "name": event.name,
                    "arguments": orjson.dumps(event.arguments).decode(),
                },
            }
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant" or _answered(last, open_calls):
                last = {"role": "assistant", "content": None}
                messages.append(last)
                seqs.append(event.seq)
            last.setdefault("tool_calls", []).append(call)
            open_calls[event.call_id] = len(messages) - 1
        elif kind is ToolResult:
            if open_calls.pop(event.call_id, None) is None:
                continue  # its call was compacted away or never logged
            messages.append(
                {"role": "tool", "tool_call_id": event.call_id, "content": event.output}
            )
            seqs.append(event.seq)
        elif kind is Compaction:
            _answer_open_calls(messages, seqs, open_calls)
            keep = [i for i, s in enumerate(seqs) if not event.first_seq <= s <= event.last_seq]
            messages[:] = [messages[i] for i in keep]
            seqs[:] = [seqs[i] for i in keep]
            at = next((i for i, s in enumerate(seqs) if s > event.last_seq), len(seqs))
            messages.insert(at, {"role": "user", "content": summary_text(event.summary)})
            seqs.insert(at, event.first_seq)
    _answer_open_calls(messages, seqs, open_calls)
    return messages, seqs


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A provider-independent token estimate: about four bytes of JSON per token."""
    return len(orjson.dumps(messages)) // 4


def summary_text(summary: str) -> str:
    return f"Summary of the conversation so far:\n{summary}"


def _answered(message: dict[str, Any], open_calls: dict[str, int]) -> bool:
    """Whether results already follow this assistant message's tool calls."""
    calls = message.get("tool_calls")
    return bool(calls) and not any(c["id"] in open_calls for c in calls)


def _answer_open_calls(
    messages: list[dict[str, Any]], seqs: list[int], open_calls: dict[str, int]
) -> None:
    for call_id, index in sorted(open_calls.items(), key=lambda item: item[1]):
        messages.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
        seqs.append(seqs[index])
    open_calls.clear()
