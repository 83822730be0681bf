"""OpenAI chat-format messages and tool specs, as Anthropic's Messages API wants them.

- system messages become the ``system`` parameter (joined, in order);
- an assistant's ``tool_calls`` become ``tool_use`` blocks after its text;
- ``tool`` messages become ``tool_result`` blocks in a user message, and
  consecutive ones (parallel calls) share that one message;
- consecutive messages of the same role are merged, because the API wants the
  roles to alternate (a compaction summary or a prompt can follow tool results);
- empty text is dropped, because the API rejects empty text blocks.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import ToolSpec
from .streaming import parse_arguments

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def to_anthropic(
    messages: list[dict[str, Any]],
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)`` for ``messages.create``."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            text = _text(message.get("content"))
            if text:
                system.append(text)
            continue
        if role == "tool":
            blocks = [_tool_result(message)]
            role = "user"
        elif role == "assistant":
            blocks = _assistant_blocks(message)
        else:
            role = "user"
            blocks = _text_blocks(message.get("content"))
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return ("\n\n".join(system) or None), out


def tools_to_anthropic(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "name": tool.name,
            "description": tool.description,
            # the API requires an object schema even for a tool without parameters
            "input_schema": tool.parameters or {"type": "object", "properties": {}},
        }
        for tool in tools
    ]


def tool_use_id(call_id: str) -> str:
    """Anthropic accepts ids of letters, digits, ``_`` and ``-`` only; a session that
    began with another provider may hold others. Applied to both ends of a call, so
    the tool_use and its tool_result still match."""
    return _ID_UNSAFE.sub("_", call_id) or "call"


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = _text_blocks(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_use_id(str(call.get("id", ""))),
                "name": function.get("name", ""),
                "input": _input(function.get("arguments")),
            }
        )
    return blocks


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id(str(message.get("tool_call_id", ""))),
        # an empty result is legal for the API but reads as a failure to the model
        "content": _text(message.get("content")) or "(no output)",
    }


def _input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    return parse_arguments(arguments if isinstance(arguments, str) else "")


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    text = _text(content)
    return [{"type": "text", "text": text}] if text.strip() else []


def _text(content: Any) -> str:
    """The text of a message's content: a string, or a list of OpenAI content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text", "") if isinstance(part, dict) else str(part) for part in content]
        return "".join(p for p in parts if p)
    return str(content)
