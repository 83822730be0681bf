"""A command in the client's terminal (ACP ``terminal/*``), as the engine's CommandResult.

``terminal/create`` (``/bin/sh -c COMMAND`` in the session's folder, as the disk
workspace runs it, under ``env -i`` with the environment policy's variables),
``terminal/wait_for_exit`` for at most the command's timeout
(then ``terminal/kill``), ``terminal/output``, and always ``terminal/release``.
The terminal is shown in the tool call as it starts, so the user watches it run.
A cancelled turn kills and releases it. The engine captures the command's file
changes around this call, as it does for a local command.

Confined as a local command is: the sandbox in force wraps ``/bin/sh -c`` in
bubblewrap inside the ``env -i`` (its limits set by ``prlimit`` inside, as the
client's spawn takes no pre-exec hook). The editor spawns agent-host on its own
machine, so the bubblewrap and private temp found here are the terminal's too.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from acp import Client
from acp.schema import EnvVariable

from ..session.environment import current_policy
from ..session.errors import ToolError
from ..session.sandbox import Launch, Sandbox, sandbox_in_force
from ..session.state import finish_even_if_cancelled
from ..session.workspace import CommandResult
from .errors import CLIENT_FAILURES

log = logging.getLogger(__name__)

ENV = "/usr/bin/env"
CLIENT_TIMEOUT = 10.0
"""Seconds to wait for the client's answer to terminal/create, output, kill, release."""


async def run(
    conn: Client,
    session_id: str,
    command: str,
    cwd: Path,
    timeout: float,
    max_output: int,
    shown: Callable[[str], Awaitable[None]],
    *,
    roots: Sequence[Path] = (),
    sandbox: Sandbox | None = None,
) -> CommandResult:
    """Run ``command`` in a client terminal; ``shown(terminal_id)`` once it exists.
    ``roots`` and ``sandbox``: as for a local command (``run_shell``)."""
    launch = sandbox_in_force(sandbox).launch(
        ["/bin/sh", "-c", command],
        roots=roots or [cwd],
        cwd=cwd,
        env=current_policy.get().environment(),
        preexec=False,
    )
    environ = launch.env
    try:
        created = await asyncio.wait_for(
            conn.create_terminal(
                session_id=session_id,
                command=ENV,
                args=wrapped(launch.argv, environ),
                env=[EnvVariable(name=k, value=v) for k, v in environ.items()],
                cwd=str(cwd),
                # The model's budget is characters; a character is at most 4 bytes.
                output_byte_limit=4 * max_output,
            ),
            CLIENT_TIMEOUT,
        )
    except CLIENT_FAILURES as exc:
        raise ToolError(f"the editor could not start the command in a terminal: {exc}") from None
    terminal_id = created.terminal_id
    ids = {"session_id": session_id, "terminal_id": terminal_id}
    try:
        await shown(terminal_id)
        return _judged(await _follow(conn, ids, timeout, max_output), launch)
    except BaseException:
        # Cancelled, or the client failed us: the command must not outlive its call.
        await finish_even_if_cancelled(_quietly("kill", conn.kill_terminal(**ids)))
        raise
    finally:
        await finish_even_if_cancelled(_quietly("release", conn.release_terminal(**ids)))


async def _follow(
    conn: Client, ids: dict[str, str], timeout: float, max_output: int
) -> CommandResult:
    timed_out = False
    exit_code: int | None = None
    try:
        status = await asyncio.wait_for(conn.wait_for_terminal_exit(**ids), timeout)
        exit_code = _exit_code(status.exit_code, status.signal)
    except TimeoutError:
        timed_out = True
        await _quietly("kill", conn.kill_terminal(**ids))
    except CLIENT_FAILURES as exc:
        raise ToolError(f"the editor's terminal failed while the command ran: {exc}") from None
    try:
        output = await asyncio.wait_for(conn.terminal_output(**ids), CLIENT_TIMEOUT)
    except CLIENT_FAILURES as exc:
        raise ToolError(f"the editor's terminal did not give the command's output: {exc}") from None
    text, truncated = _fit(output.output, max_output)
    if output.truncated:
        text = "[... earlier output dropped by the terminal ...]\n" + text
    return CommandResult(
        exit_code=None if timed_out else exit_code,
        output=text,
        timed_out=timed_out,
        truncated=truncated or output.truncated,
    )


def _judged(result: CommandResult, launch: Launch) -> CommandResult:
    if launch.note:
        result.output = f"{launch.note}\n{result.output}"
    result.sandboxed = launch.confined
    result.sandbox_denial = launch.denial(result.output, result.exit_code)
    return result


def wrapped(argv: Sequence[str], environ: dict[str, str]) -> list[str]:
    """``env``'s arguments to run ``argv`` (``/bin/sh -c command``, in the sandbox
    or not) in exactly ``environ``.

    ``env`` in terminal/create only adds to the editor's own environment, which
    holds whatever the editor was started with (the model's key, tokens): ``env -i``
    clears it, so the command sees the policy's environment and nothing else.
    """
    pairs = [f"{k}={v}" for k, v in environ.items() if "=" not in k]
    return ["-i", *pairs, *argv]


def _exit_code(code: int | None, signal_name: str | None) -> int | None:
    """The engine's convention: the exit status, or minus the signal's number."""
    if code is not None:
        return code
    if signal_name:
        name = signal_name.upper()
        if name.isdigit():
            return -int(name)
        try:
            return -signal.Signals[name if name.startswith("SIG") else f"SIG{name}"]
        except KeyError:
            log.debug("unknown signal %r ended a terminal command", signal_name)
    return None


def _fit(text: str, max_chars: int) -> tuple[str, bool]:
    """``text`` within ``max_chars``, its middle cut out, as a local command's is."""
    if len(text) <= max_chars:
        return text, False
    keep = max(max_chars // 2, 1)
    omitted = len(text) - 2 * keep
    marker = f"\n\n[... output truncated: {omitted:,} characters omitted from the middle ...]\n\n"
    return text[:keep] + marker + text[-keep:], True


async def _quietly(what: str, request: Awaitable[Any]) -> None:
    # Best effort: the client may be gone, or have released the terminal itself.
    try:
        await asyncio.wait_for(request, CLIENT_TIMEOUT)
    except CLIENT_FAILURES as exc:
        log.debug("terminal/%s failed: %s", what, exc)
