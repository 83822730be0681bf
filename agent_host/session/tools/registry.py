"""Every built-in tool, one row each: what the model sees (its spec), what the
approval policy sorts it as (its kind), what runs it (its handler), how a person
reads a call of it (its title) and, for a tool that edits a file, the text it
would leave there (its preview). The turn, the approval gate and both front ends
read these rows; adding a tool is its module (spec and handler) and one row.

An MCP server's tool has the same shape (:class:`~..mcp.tool.McpTool`: spec, kind
``external``/``external_read``, title) but is run by its server, not a handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import attrs

from ..approval import ToolKind
from ..mcp.tool import title_of_qualified
from ..model import ToolSpec
from . import previews, specs
from .command import run_command
from .context import ToolContext, ToolOutcome
from .files import delete_file, edit_file, read_file, write_file
from .search import grep, list_files

ToolAction = Literal["read", "search", "edit", "delete", "execute", "other"]
"""What a call does, as a front end shows it (finer than the kind: a search is a
read, a delete an edit)."""

Handler = Callable[[ToolContext, dict[str, Any]], Awaitable["str | ToolOutcome"]]
Preview = Callable[[dict[str, Any], str | None], str | None]
Title = Callable[[dict[str, Any]], str]

TITLE_LIMIT = 80

_ACTIONS: dict[ToolKind, ToolAction] = {
    "read": "read",
    "edit": "edit",
    "command": "execute",
    "external": "other",
    "external_read": "other",
}


@attrs.frozen
class Tool:
    spec: ToolSpec
    kind: ToolKind
    run: Handler
    title: Title
    """``Edit src/a.py``: a call of the tool with these arguments, for a person."""
    preview: Preview | None = None
    """For a tool that changes the file at its ``path`` argument: the text it would
    leave there (see :mod:`.previews`)."""
    action: ToolAction | None = None
    """What a call does, when the kind alone does not say it."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def shown_as(self) -> ToolAction:
        return self.action or _ACTIONS[self.kind]


def one_line(text: str, limit: int = TITLE_LIMIT) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _on_path(verb: str) -> Title:
    return lambda args: f"{verb} {args.get('path')}"


def _where(args: dict[str, Any]) -> str:
    path = args.get("path")
    return f" in {path}" if isinstance(path, str) and path else ""


TOOLS: tuple[Tool, ...] = (
    Tool(specs.READ_FILE, "read", read_file, _on_path("Read")),
    Tool(specs.WRITE_FILE, "edit", write_file, _on_path("Write"), previews.written),
    Tool(specs.EDIT_FILE, "edit", edit_file, _on_path("Edit"), previews.edited),
    Tool(
        specs.DELETE_FILE,
        "edit",
        delete_file,
        _on_path("Delete"),
        previews.deleted,
        action="delete",
    ),
    Tool(
        specs.LIST_FILES,
        "read",
        list_files,
        lambda args: f"List files {args.get('pattern') or ''}".rstrip() + _where(args),
    ),
    Tool(
        specs.GREP,
        "read",
        grep,
        lambda args: f"Search for {args.get('pattern')!r}{_where(args)}",
        action="search",
    ),
    Tool(
        specs.RUN_COMMAND,
        "command",
        run_command,
        lambda args: one_line(f"Run {args.get('command', '')}"),
    ),
)

BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
TOOL_SPECS: list[ToolSpec] = [tool.spec for tool in TOOLS]
TOOL_KINDS: dict[str, ToolKind] = {tool.name: tool.kind for tool in TOOLS}


def tool_named(name: str) -> Tool | None:
    return BY_NAME.get(name)


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """The title of a call of any tool: a built-in's own, an MCP tool's
    ``tool (server)``, else the name."""
    tool = BY_NAME.get(name)
    if tool is not None:
        return tool.title(arguments)
    return title_of_qualified(name) or name


def tool_action(name: str) -> ToolAction:
    """What a call of ``name`` does; ``other`` for a tool that is not built in."""
    tool = BY_NAME.get(name)
    return tool.shown_as if tool is not None else "other"
