"""The OpenAI Agents SDK's session items, in and out of our events.

``add_items`` takes chat-completions messages and the Responses API items the
Agents SDK stores (``function_call``, ``function_call_output``, messages with
content parts); ``get_items(limit)`` never starts on a tool result whose call was
cut off by the limit.
"""

from __future__ import annotations

from typing import Any

import orjson

from . import events as ev


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


def items_to_events(items: list[dict[str, Any]]) -> list[ev.Event]:
    out: list[ev.Event] = []
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"item {number} is not an object")
        kind = item.get("type")
        role = item.get("role")
        if kind == "function_call":
            out.append(
                ev.ToolCall(
                    call_id=str(item["call_id"]),
                    name=str(item["name"]),
                    arguments=_arguments(item.get("arguments")),
                )
            )
        elif kind == "function_call_output":
            out.append(ev.ToolResult(call_id=str(item["call_id"]), output=_text(item["output"])))
        elif role == "user":
            out.append(ev.UserPrompt(text=_text(item.get("content"))))
        elif role == "assistant":
            out.append(ev.AssistantMessage(text=_text(item.get("content"))))
            for call in item.get("tool_calls") or []:
                function = call.get("function", {})
                out.append(
                    ev.ToolCall(
                        call_id=str(call["id"]),
                        name=str(function.get("name", "")),
                        arguments=_arguments(function.get("arguments")),
                    )
                )
        elif role == "tool":
            out.append(
                ev.ToolResult(call_id=str(item["tool_call_id"]), output=_text(item.get("content")))
            )
        else:
            raise ValueError(
                f"item {number} is neither a chat message (role user, assistant or tool) "
                "nor a function_call / function_call_output item"
            )
    return out


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "input_text", "text": ...}]
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_raw": raw}
