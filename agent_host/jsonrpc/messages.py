"""What makes a JSON value a JSON-RPC 2.0 message, for both front ends' readers."""

from __future__ import annotations

from typing import Any

from .limits import MAX_LIST_ITEMS

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def is_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def invalid_message(message: Any) -> str | None:
    """Why ``message`` is no JSON-RPC 2.0 request, notification or response, if not.

    Batches are not supported (neither LSP nor ACP sends them): one -32600 with id
    null answers a whole batch.
    """
    if isinstance(message, list):
        return "batches are not supported: send one message at a time"
    if not isinstance(message, dict):
        return "a message is a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'a message has "jsonrpc": "2.0"'
    if "id" in message and not is_id(message["id"]):
        return "an id is a string or an integer"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "the method is a string"
        return None
    if "id" not in message:
        return "a message has a method, or is a response with an id"
    if ("result" in message) == ("error" in message):
        return "a response has either a result or an error"
    return None


def overlong_array(value: Any) -> tuple[str, int] | None:
    """The path and length of the first array in ``value`` longer than
    MAX_LIST_ITEMS, if any ("prompt", "mcpServers[0].args").

    Iterative (a parsed value can be ~1,000 levels deep), and an array's length is
    checked before its items are looked at.
    """
    stack = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, list):
            if len(node) > MAX_LIST_ITEMS:
                return where or "(the value)", len(node)
            stack.extend(
                (item, f"{where}[{i}]") for i, item in enumerate(node) if type(item) in (list, dict)
            )
        elif isinstance(node, dict):
            stack.extend(
                (item, f"{where}.{key}" if where else str(key))
                for key, item in node.items()
                if type(item) in (list, dict)
            )
    return None
