"""An MCP tool's result as text for the model.

Binary content (images, audio, blobs) is described, not inlined: the model gets
its kind and size, which is what a text tool result can carry.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..limits import COMMAND_MAX_OUTPUT

if TYPE_CHECKING:
    from mcp import types

MAX_RESULT_CHARS = COMMAND_MAX_OUTPUT


def result_text(result: types.CallToolResult) -> tuple[str, bool]:
    """The text of ``result`` (at most :data:`MAX_RESULT_CHARS`) and its is_error."""
    parts = [_content_text(item) for item in result.content]
    has_text = any(getattr(item, "type", None) == "text" for item in result.content)
    # Servers that return structured content also return it as text (the SDK does so
    # by default), so the JSON is added only when there is no text to say it.
    if result.structured_content is not None and not has_text:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(parts) if parts else "(the tool returned no content)"
    return cap(text), bool(result.is_error)


def cap(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"


def _content_text(item: Any) -> str:
    kind = getattr(item, "type", None)
    if kind == "text":
        return item.text
    if kind in ("image", "audio"):
        return f"[{kind}: {item.mime_type}, {_b64_size(item.data)} bytes]"
    if kind == "resource":
        resource = item.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {resource.uri}]\n{text}"
        mime = resource.mime_type or "application/octet-stream"
        return f"[resource {resource.uri}: {mime}, {_b64_size(resource.blob)} bytes]"
    if kind == "resource_link":
        return f"[resource link: {item.name} {item.uri}]"
    return f"[{kind or type(item).__name__} content]"


def _b64_size(data: str | bytes) -> int:
    """The decoded size of base64 ``data``, without decoding it."""
    if isinstance(data, bytes):
        return len(data.rstrip(b"=")) * 3 // 4
    return len(data.rstrip("=")) * 3 // 4
