"""run_command: a shell command in the workspace, its output and exit status."""

from __future__ import annotations

from typing import Any

from ..errors import ToolError
from ..limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT
from .context import ToolContext, ToolOutcome


async def run_command(ctx: ToolContext, args: dict[str, Any]) -> ToolOutcome:
    command: str = args["command"]
    if not command.strip():
        raise ToolError("command is empty")
    timeout = float(args.get("timeout", COMMAND_DEFAULT_TIMEOUT))
    if ctx.run_command is not None:
        result = await ctx.run_command(command, timeout, COMMAND_MAX_OUTPUT)
    else:
        result = await ctx.workspace.run_command(
            command, timeout=timeout, max_output=COMMAND_MAX_OUTPUT
        )
    output = result.output.rstrip("\n") or "(no output)"
    if result.timed_out:
        status = (
            f"[timed out after {timeout:g} s; the command and everything it started were "
            "killed. Raise timeout, or make the command finish sooner]"
        )
    elif result.exit_code is not None and result.exit_code < 0:
        status = f"[killed by signal {-result.exit_code}]"
    else:
        status = f"[exit code {result.exit_code}]"
    # A failing command is reported as an error result, but its output is all there.
    return ToolOutcome(f"{output}\n\n{status}", is_error=result.timed_out or result.exit_code != 0)
