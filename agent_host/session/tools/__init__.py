"""The agent's file and command tools, and the one entry point that runs them.

The model sees :data:`TOOL_SPECS`; the engine calls :func:`run_tool` with a
:class:`ToolContext`. Tools touch files only through the context: reads through
``ctx.workspace`` and every change through ``ctx.change_file``, which records the
before and after content in the session log before the write happens, so any
change a tool makes can be rewound. :data:`TOOL_KINDS` sorts the tools for the
approval policy.
"""

from .context import ToolContext, ToolOutcome
from .dispatch import run_tool
from .specs import TOOL_KINDS, TOOL_SPECS, ToolKind

__all__ = ["TOOL_KINDS", "TOOL_SPECS", "ToolContext", "ToolKind", "ToolOutcome", "run_tool"]
