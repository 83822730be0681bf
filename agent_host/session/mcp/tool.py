"""An MCP server's tool as the model sees it: ``mcp__<server>__<tool>``."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

import attrs

from ..approval import ToolKind
from ..model import ToolSpec

if TYPE_CHECKING:
    from mcp import types

# What the model APIs (OpenAI, Anthropic) accept as a tool name.
_MODEL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OTHER_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@attrs.frozen
class McpTool:
    """One tool of one MCP server. ``name`` is the server's, sent back on a call;
    ``qualified`` is the model's; ``read_only`` is the server's own claim
    (``annotations.readOnlyHint``), a hint for the approval policy, not a guarantee."""

    server: str
    name: str
    qualified: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.qualified, self.description, self.input_schema)

    @property
    def kind(self) -> ToolKind:
        return "external_read" if self.read_only else "external"

    def title(self, arguments: dict[str, Any]) -> str:
        return f"{self.name} ({self.server})"


def qualified_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, made into a name the model APIs take.

    A name that needs no change keeps it; any other has its odd characters replaced
    and ends in a hash of the original, so two tools that sanitise alike stay apart.
    """
    plain = f"mcp__{server}__{tool}"
    if _MODEL_NAME.match(plain):
        return plain
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{_OTHER_CHARS.sub('_', plain)[: 64 - 9]}_{digest}"


def title_of_qualified(name: str) -> str | None:
    """``tool (server)`` for a name that looks like ``mcp__<server>__<tool>``; a
    front end that sees only the name shows this."""
    if not name.startswith("mcp__"):
        return None
    _, server, tool = (name.split("__", 2) + ["", ""])[:3]
    return f"{tool} ({server})"


def from_sdk(server: str, tool: types.Tool) -> McpTool:
    """The :class:`McpTool` for a tool a server listed."""
    annotations = tool.annotations
    return McpTool(
        server=server,
        name=tool.name,
        qualified=qualified_name(server, tool.name),
        description=tool.description or tool.title or "",
        input_schema=dict(tool.input_schema) if tool.input_schema else dict(_EMPTY_SCHEMA),
        read_only=annotations is not None and annotations.read_only_hint is True,
    )
