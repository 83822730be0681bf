"""run_command: a shell command in the workspace, its output and exit status.

A command the sandbox stopped (:mod:`..sandbox.denial`) is said to be so, and the
user is asked whether to run it again without the sandbox (once, or always for
that command); the model sees what became of both runs.
"""

from __future__ import annotations

from typing import Any

from ..errors import ToolError
from ..limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT
from ..sandbox import unconfined
from ..workspace import CommandResult
from .context import ToolContext, ToolOutcome


async def run_command(ctx: ToolContext, args: dict[str, Any]) -> ToolOutcome:
    command: str = args["command"]
    if not command.strip():
        raise ToolError("command is empty")
    timeout = float(args.get("timeout", COMMAND_DEFAULT_TIMEOUT))
    escape = ctx.sandbox_exit
    if escape is not None and escape.remembered(command):
        with unconfined():
            result = await _run(ctx, command, timeout)
        return _outcome(result, timeout, "[run without the sandbox: the user always allows it]")
    result = await _run(ctx, command, timeout)
    denial = result.sandbox_denial
    if denial is None:
        return _outcome(result, timeout)  # confined, or unconfined by the policy
    stopped = f"[the sandbox stopped this command: {denial}]"
    if escape is None or not await escape.ask(command, denial):
        first = _outcome(result, timeout)
        return ToolOutcome(
            f"{first.output}\n{stopped}\n[the user did not approve running it without the "
            "sandbox. Do not retry it as it is: work in the session's folders and $TMPDIR, "
            "without the network, or ask the user]",
            is_error=True,
            unconfined=first.unconfined,
        )
    with unconfined():
        again = await _run(ctx, command, timeout)
    first = _outcome(result, timeout)
    return _outcome(
        again,
        timeout,
        f"{first.output}\n{stopped}\n[the user approved running it without the sandbox; "
        "its second run:]",
    )


async def _run(ctx: ToolContext, command: str, timeout: float) -> CommandResult:
    if ctx.run_command is not None:
        return await ctx.run_command(command, timeout, COMMAND_MAX_OUTPUT)
    return await ctx.workspace.run_command(command, timeout=timeout, max_output=COMMAND_MAX_OUTPUT)


def _outcome(result: CommandResult, timeout: float, before: str | None = None) -> ToolOutcome:
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
    text = f"{output}\n\n{status}"
    if before:
        text = f"{before}\n{text}"
    # A failing command is reported as an error result, but its output is all there.
    return ToolOutcome(
        text, is_error=result.timed_out or result.exit_code != 0, unconfined=not result.sandboxed
    )
