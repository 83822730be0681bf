"""The MCP SDK's stdio client, telling us which process it spawned.

The SDK keeps the server's process to itself, yet two things need it: noticing
that the server exited while something it started still holds its stdout (no end
of file ever comes, and a call would wait for ever), and ending what it left
behind -- the SDK kills the server's process group only when the server itself
outlives the grace after stdin closes, and nothing when the host dies. The SDK
offers no hook, so this shim (with :mod:`.line_reader`, the places we reach in)
wraps its spawn function, ``mcp.client.stdio._create_platform_compatible_process``,
and hands each process to the callback in :data:`on_spawn` of the task that
spawned it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

on_spawn: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "agent_host_mcp_on_spawn", default=None
)
"""Called with the SDK's process object (anyio's Process) right after the spawn."""

_installed = False


def install() -> None:
    """Wrap the SDK's spawn function (idempotent)."""
    global _installed
    if _installed:
        return
    import mcp.client.stdio

    spawn = mcp.client.stdio._create_platform_compatible_process

    async def spawn_and_tell(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        callback = on_spawn.get()
        if callback is not None:
            callback(process)
        return process

    mcp.client.stdio._create_platform_compatible_process = spawn_and_tell
    _installed = True
