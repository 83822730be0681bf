"""The model's view of a session, folded from its events as OpenAI chat messages.

Every tool call in the result has a result: a call whose result never made it
into the log (a crash or a cancel mid-tool) gets one saying so, because the
providers reject a conversation with an unanswered call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson

from .events import AssistantMessage, Compaction, Event, ToolCall, ToolResult, UserPrompt
from .model import RAW_ARGUMENTS_KEY

INTERRUPTED = "[tool call interrupted before it returned a result]"


def to_messages(events: Iterable[Event]) -> list[dict[str, Any]]:
    """OpenAI chat-format messages for ``events``, in order.

    A ``Compaction`` replaces the messages of the events it covers with its summary.
    """
    return messages_with_seqs(events)[0]


def messages_with_seqs(events: Iterable[Event]) -> tuple[list[dict[str, Any]], list[int]]:
    """:func:`to_messages`, and for each message the seq of the event that opened it."""
    fold = MessageFold()
    fold.extend(events)
    return fold.view()


class MessageFold:
    """:func:`to_messages` folded incrementally: a resume starts from a snapshot's
    messages and seqs (see :mod:`.resume_snapshot`) and folds newer events on top.

    Only the visible events (a timeline) may be folded: a restore that hides
    events already folded cannot be taken back here.
    """

    __slots__ = ("messages", "seqs", "open_calls")

    def __init__(
        self, messages: list[dict[str, Any]] | None = None, seqs: list[int] | None = None
    ) -> None:
        self.messages: list[dict[str, Any]] = messages if messages is not None else []
        self.seqs: list[int] = seqs if seqs is not None else []
        """The seq of the event that opened each message."""
        self.open_calls: dict[str, int] = {}
        """Call id -> index of the message holding it, for calls not answered yet."""

    def view(self) -> tuple[list[dict[str, Any]], list[int]]:
        """The messages and their seqs as the model is sent them: every open call
        answered as interrupted, without closing it here (its result may follow)."""
        if not self.open_calls:
            return list(self.messages), list(self.seqs)
        messages, seqs = list(self.messages), list(self.seqs)
        _answer_open_calls(messages, seqs, dict(self.open_calls))
        return messages, seqs

    def extend(self, events: Iterable[Event]) -> None:
        messages, seqs, open_calls = self.messages, self.seqs, self.open_calls
        for event in events:
            match event:
                case UserPrompt():
                    if open_calls:
                        _answer_open_calls(messages, seqs, open_calls)
                    content = prompt_content(event) if event.item is None else _user_content(event)
                    messages.append({"role": "user", "content": content})
                    seqs.append(event.seq)
                case AssistantMessage():
                    if open_calls:
                        _answer_open_calls(messages, seqs, open_calls)
                    messages.append({"role": "assistant", "content": event.text})
                    seqs.append(event.seq)
                case ToolCall():
                    call = {
                        "id": event.call_id,
                        "type": "function",
                        "function": {"name": event.name, "arguments": call_arguments(event)},
                    }
                    last = messages[-1] if messages else None
                    if last is None or last["role"] != "assistant" or _answered(last, open_calls):
                        last = {"role": "assistant", "content": None}
                        messages.append(last)
                        seqs.append(event.seq)
                    elif "tool_calls" in last:
                        # Copied, not changed in place: a view handed out before
                        # shares this dict, and must not grow a call afterwards.
                        last = messages[-1] = {**last, "tool_calls": list(last["tool_calls"])}
                    else:
                        last = messages[-1] = dict(last)
                    last.setdefault("tool_calls", []).append(call)
                    open_calls[event.call_id] = len(messages) - 1
                case ToolResult():
                    if open_calls.pop(event.call_id, None) is None:
                        continue  # its call was compacted away or never logged
                    messages.append(
                        {"role": "tool", "tool_call_id": event.call_id, "content": event.output}
                    )
                    seqs.append(event.seq)
                case Compaction():
                    _answer_open_calls(messages, seqs, open_calls)
                    keep = [
                        i for i, s in enumerate(seqs) if not event.first_seq <= s <= event.last_seq
                    ]
                    messages[:] = [messages[i] for i in keep]
                    seqs[:] = [seqs[i] for i in keep]
                    at = next((i for i, s in enumerate(seqs) if s > event.last_seq), len(seqs))
                    messages.insert(at, {"role": "user", "content": summary_text(event.summary)})
                    seqs.insert(at, event.first_seq)


def call_arguments(call: ToolCall) -> str:
    """A call's arguments as the model wrote them: the SDK's string when it gave one
    (kept even when it is not JSON), else our parsed arguments as JSON."""
    if call.item is not None and isinstance(call.item.get("arguments"), str):
        return call.item["arguments"]
    raw = call.arguments.get(RAW_ARGUMENTS_KEY)
    if len(call.arguments) == 1 and isinstance(raw, str) and _is_json_object(raw):
        # Logged as text because orjson could not write them (events.loggable).
        return raw
    return orjson.dumps(call.arguments).decode()


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def prompt_content(prompt: UserPrompt) -> str:
    """A prompt as the model reads it: its text, then each context block."""
    if not prompt.context:
        return prompt.text
    blocks = [
        f"<context uri={c['uri']!r}>\n{c.get('text', '')}\n</context>"
        if c.get("uri")
        else str(c.get("text", ""))
        for c in prompt.context
    ]
    return "\n\n".join([prompt.text, *blocks])


def _user_content(prompt: UserPrompt) -> str | list[dict[str, Any]]:
    """A prompt the SDK stored, in chat form: its text, or text and image parts."""
    parts = prompt.item.get("content") if prompt.item else None
    if not isinstance(parts, list) or not any(_is_image(p) for p in parts):
        return prompt.text
    out: list[dict[str, Any]] = []
    for part in parts:
        if _is_image(part) and part.get("image_url"):
            image = {"url": part["image_url"]}
            if part.get("detail"):
                image["detail"] = part["detail"]
            out.append({"type": "image_url", "image_url": image})
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
    return out


def _is_image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "input_image"


def limit_messages(messages: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """The last ``limit`` messages, widened so no tool result loses its call."""
    if limit is None:
        return messages
    if limit <= 0:
        return []
    start = max(len(messages) - limit, 0)
    while start > 0 and messages[start].get("role") == "tool":
        start -= 1
    return messages[start:]


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A provider-independent token estimate: about four bytes of JSON per token."""
    return len(orjson.dumps(messages)) // 4


def summary_text(summary: str) -> str:
    return f"Summary of the conversation so far:\n{summary}"


def _answered(message: dict[str, Any], open_calls: dict[str, int]) -> bool:
    """Whether results already follow this assistant message's tool calls."""
    calls = message.get("tool_calls")
    if not calls:
        return False
    return not any(c["id"] in open_calls for c in calls)


def _answer_open_calls(
    messages: list[dict[str, Any]], seqs: list[int], open_calls: dict[str, int]
) -> None:
    for call_id, index in sorted(open_calls.items(), key=lambda item: item[1]):
        messages.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
        seqs.append(seqs[index])
    open_calls.clear()
