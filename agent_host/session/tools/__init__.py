"""The agent's file and command tools, and the one entry point that runs them.

The model sees :data:`TOOL_SPECS`; the engine calls :func:`run_tool` with a
:class:`ToolContext`. Tools touch files only through the context: reads through
``ctx.workspace`` and every change through ``ctx.change_file``, which records the
before and after content in the session log before the write happens, so any
change a tool makes can be rewound. Each tool is a row of :data:`.registry.TOOLS`
(spec, kind, handler, title, edit preview).
"""

from .context import ToolContext, ToolOutcome
from .dispatch import run_tool
from .registry import TOOL_KINDS, TOOL_SPECS, TOOLS, Tool, ToolKind, tool_named

__all__ = [
    "TOOLS",
    "TOOL_KINDS",
    "TOOL_SPECS",
    "Tool",
    "ToolContext",
    "ToolKind",
    "ToolOutcome",
    "run_tool",
    "tool_named",
]
