"""The OpenAI Agents SDK's session items, in and out of our events.

The SDK stores Responses API input items and expects them back exactly: an item
given to ``add_items`` becomes one event carrying it verbatim (``item``), so
``get_items`` returns it unchanged, ids, status, content parts and unknown types
included, and ``pop_item`` removes exactly it. Items the conversation has a place
for (user and assistant messages, function calls and their outputs) become the
events our own turns write, so an SDK session is also a normal agent-host
session: listed, checkpointed at its prompts, continued by ``agent-host run``.
Events our own turns wrote (no ``item``) are given to the SDK as the items it
would have stored for them.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from . import events as ev
from .conversation import INTERRUPTED, call_arguments, prompt_content, summary_text
from .errors import InvalidArgument
from .model import RAW_ARGUMENTS_KEY
from .state import SessionState

Item = dict[str, Any]


def items_to_events(items: list[Item]) -> list[ev.Event]:
    """One event per Responses item, in order; a chat-completions message (role
    ``tool``, or an assistant message with ``tool_calls``) is first turned into
    the Responses items it stands for."""
    out: list[ev.Event] = []
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidArgument(f"item {number} is not a JSON object: {type(item).__name__}")
        try:
            orjson.dumps(item)
        except TypeError as exc:
            raise InvalidArgument(f"item {number} cannot be stored as JSON: {exc}") from None
        out.extend(_event(part) for part in _responses_items(item))
    return out


async def pop_last_item(state: SessionState) -> Item | None:
    """Remove and return the session's latest item, exactly it: the log is cut back
    to the event it came from (the cut stays in the store's truncations)."""
    entries = item_entries(state.timeline)
    if not entries:
        return None
    last = entries[-1]
    keep = max(last.seq - 1, _opening(state.events))
    # A summary logged after the item stands for earlier ones: it is put back.
    summary = next(
        (e for e in reversed(state.timeline) if type(e) is ev.Compaction and e.seq > keep),
        None,
    )
    await state.truncate(keep)
    if summary is not None and last.summary is None and summary.last_seq <= keep:
        await state.append([attrs.evolve(summary, seq=0, ts=0.0)])
    return last.item


async def clear_items(state: SessionState) -> None:
    """Every item goes; the session's opening (folder, model, title) stays."""
    keep = _opening(state.events)
    if state.head > keep:
        await state.truncate(keep)


def _opening(events: list[ev.Event]) -> int:
    """How many events open the log and are no item: its SessionStarted (0 or 1)."""
    return 1 if events and type(events[0]) is ev.SessionStarted else 0


def limit_items(items: list[Item], limit: int | None) -> list[Item]:
    """The SDK's limit: None or a negative limit is all, 0 is none, else the latest."""
    if limit is None or limit < 0:
        return items
    return items[len(items) - limit :] if limit else []


def to_items(events: list[ev.Event]) -> list[Item]:
    """The session as the Agents SDK stores it: Responses API input items."""
    return [entry.item for entry in item_entries(events)]


@attrs.define
class ItemEntry:
    """One item of the SDK's view, and where it lies in the log."""

    item: Item
    seq: int
    """The seq of the event it came from (a summary: the first seq it stands for)."""
    summary: ev.Compaction | None = None


def item_entries(events: list[ev.Event]) -> list[ItemEntry]:
    """The items of ``events`` (a timeline), each with the seq it came from.

    A call our own turn logged without its result (a crash mid-tool) gets the
    result the conversation gives it; the SDK's own items are never added to."""
    entries: list[ItemEntry] = []
    open_calls: set[str] = set()
    for event in events:
        if isinstance(event, ev.Compaction):
            entries = [e for e in entries if not event.first_seq <= e.seq <= event.last_seq]
            at = next((i for i, e in enumerate(entries) if e.seq > event.last_seq), len(entries))
            summary = {"role": "user", "content": summary_text(event.summary)}
            entries.insert(at, ItemEntry(summary, event.first_seq, event))
            continue
        if not isinstance(event, _ITEM_EVENTS):
            continue
        item = event.item
        if item is None:
            match event:
                case ev.ToolResult():
                    if event.call_id not in open_calls:
                        continue  # its call was compacted away or never logged
                    open_calls.discard(event.call_id)
                case ev.ToolCall():
                    open_calls.add(event.call_id)
                case _ if open_calls:
                    entries.extend(_interrupted(open_calls, entries[-1].seq))
            item = _render(event)
            if item is None:
                continue
        entries.append(ItemEntry(item, event.seq))
    if open_calls:
        entries.extend(_interrupted(open_calls, entries[-1].seq))
    return entries


_ITEM_EVENTS = (ev.UserPrompt, ev.AssistantMessage, ev.ToolCall, ev.ToolResult, ev.InputItem)


def _interrupted(open_calls: set[str], seq: int) -> list[ItemEntry]:
    out = [
        ItemEntry({"type": "function_call_output", "call_id": c, "output": INTERRUPTED}, seq)
        for c in sorted(open_calls)
    ]
    open_calls.clear()
    return out


def _render(event: ev.Event) -> Item | None:
    """The item the SDK would have stored for an event our own turn wrote."""
    match event:
        case ev.UserPrompt():
            return {"role": "user", "content": prompt_content(event)}
        case ev.AssistantMessage():
            # A step that only called tools logs an empty message: the SDK has no item for it.
            return {"role": "assistant", "content": event.text} if event.text else None
        case ev.ToolCall():
            return {
                "type": "function_call",
                "call_id": event.call_id,
                "name": event.name,
                "arguments": call_arguments(event),
            }
        case ev.ToolResult():
            return {
                "type": "function_call_output",
                "call_id": event.call_id,
                "output": event.output,
            }
    return None


def _event(item: Item) -> ev.Event:
    kind = item.get("type")
    role = item.get("role")
    if kind == "function_call" and _has_str(item, "call_id", "name"):
        return ev.ToolCall(
            call_id=item["call_id"],
            name=item["name"],
            arguments=_arguments(item.get("arguments")),
            item=item,
        )
    if kind == "function_call_output" and _has_str(item, "call_id"):
        return ev.ToolResult(call_id=item["call_id"], output=_text(item.get("output")), item=item)
    if kind in (None, "message") and role == "user":
        return ev.UserPrompt(text=_text(item.get("content")), item=item)
    if kind in (None, "message") and role == "assistant":
        return ev.AssistantMessage(text=_text(item.get("content")), item=item)
    return ev.InputItem(item=item)


def _responses_items(item: Item) -> list[Item]:
    """``item`` itself, or the Responses items for a chat-completions message."""
    role = item.get("role")
    if role == "tool" and "type" not in item and "tool_call_id" in item:
        return [
            {
                "type": "function_call_output",
                "call_id": str(item["tool_call_id"]),
                "output": _text(item.get("content")),
            }
        ]
    if role == "assistant" and item.get("tool_calls") and "type" not in item:
        out: list[Item] = []
        if item.get("content"):
            out.append({"role": "assistant", "content": item["content"]})
        for call in item["tool_calls"]:
            function = call.get("function") or {}
            arguments = function.get("arguments", "{}")
            out.append(
                {
                    "type": "function_call",
                    "call_id": str(call.get("id", "")),
                    "name": str(function.get("name", "")),
                    "arguments": arguments
                    if isinstance(arguments, str)
                    else orjson.dumps(arguments).decode(),
                }
            )
        return out
    return [item]


def _has_str(item: Item, *keys: str) -> bool:
    return all(isinstance(item.get(k), str) for k in keys)


def _text(content: Any) -> str:
    """The text of a message's content or a call's output: a string, or the text
    and refusal parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", p.get("refusal", ""))) for p in content if isinstance(p, dict)
        )
    return str(content)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {RAW_ARGUMENTS_KEY: raw}
    return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS_KEY: raw}
