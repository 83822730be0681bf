"""The MCP servers one session (or a whole host) uses, and their tools.

Nothing here raises for a server's sake: a server that will not start is reported
and left out, a server that dies is restarted once per call, and every failed call
becomes an error result the model can read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

import attrs

from ..errors import McpConfigError
from ..tasks import run_task
from .config import McpServerConfig
from .connection import McpConnection, ServerGone, StartFailed
from .results import result_text
from .tool import McpTool, from_sdk

log = logging.getLogger(__name__)

RETRY_FAILED_AFTER = 60.0  # seconds before a server that failed to start is tried again
START_TIMEOUT = 30.0
"""Seconds a server has to spawn or connect, answer ``initialize`` and list its tools."""
TOOL_TIMEOUT = 300.0
"""Seconds a tool call may take unless its server's config says otherwise: long
enough for a tool that runs a build or a test suite, short enough that a call
whose answer never comes ends the wait (a CI run must not hang)."""


@attrs.frozen
class McpServerStatus:
    """What became of a server: ``message`` is for people and holds no secrets."""

    server: str
    state: Literal["ready", "failed", "restarted", "stopped"]
    message: str
    tools: int = 0


Report = Callable[[McpServerStatus], Awaitable[None]]


class McpServers:
    """Starts servers on first use, lists and caches their tools, calls them.

    ``start_timeout`` bounds a server's startup (spawn or connect, initialize, list
    tools); ``call_timeout`` bounds a call of a server whose config sets no
    ``tool_timeout``. A call that runs out is cancelled (the server is told) and
    its result says so; the turn goes on.
    """

    def __init__(
        self,
        configs: Iterable[McpServerConfig],
        *,
        start_timeout: float = START_TIMEOUT,
        call_timeout: float = TOOL_TIMEOUT,
    ) -> None:
        self._configs: dict[str, McpServerConfig] = {}
        for config in configs:
            if config.name in self._configs:
                raise McpConfigError(f"duplicate MCP server name {config.name!r}")
            self._configs[config.name] = config
        self._start_timeout = start_timeout
        self._call_timeout = call_timeout
        self._running: dict[str, McpConnection] = {}
        self._tools: dict[str, dict[str, McpTool]] = {}  # server -> qualified -> tool
        self._failed: dict[str, tuple[float, str]] = {}  # server -> (when, message)
        self._locks = {name: asyncio.Lock() for name in self._configs}
        self._open: set[McpConnection] = set()  # every connection not yet closed
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    async def tools(self, report: Report | None = None) -> list[McpTool]:
        """Every server's tools, starting (concurrently) the servers not yet running.

        A server that fails is reported and left out; it is tried again after
        :data:`RETRY_FAILED_AFTER` seconds or after :meth:`restart`.
        """
        if self._closed:
            return []
        statuses = await asyncio.gather(*(self._ensure(name) for name in self._configs))
        await _report(report, statuses)
        return [tool for name in self._configs for tool in self._tools.get(name, {}).values()]

    def find(self, qualified: str) -> McpTool | None:
        """The listed tool the model calls ``qualified``."""
        for tools in self._tools.values():
            if (tool := tools.get(qualified)) is not None:
                return tool
        return None

    def confined(self, qualified: str) -> bool:
        """Whether the server of the tool the model calls ``qualified`` runs in a
        sandbox now (False when it is not running: nothing to vouch for)."""
        tool = self.find(qualified)
        conn = self._running.get(tool.server) if tool is not None else None
        return conn is not None and conn.confined

    async def call(
        self, qualified: str, arguments: dict[str, Any], report: Report | None = None
    ) -> tuple[str, bool]:
        """Call a tool: the text for the model and whether it is an error.

        A server that died before the call is restarted and the call made there; one
        that dies during it is restarted and the call is not repeated (it may have
        done part of its work). An asyncio cancel propagates; the SDK tells the server.
        """
        if self._closed:
            return "the MCP servers were shut down for this session", True
        tool = self.find(qualified) or await self._find_after_listing(qualified, report)
        if tool is None:
            return self._unknown(qualified), True
        if not isinstance(arguments, dict):
            return f"the arguments of {qualified} must be a JSON object", True
        return await self._call(tool, arguments, report)

    async def restart(self, server: str | None = None) -> None:
        """Stop ``server`` (default: all) and forget past failures; the next
        :meth:`tools` or :meth:`call` starts it again."""
        if server is not None and server not in self._configs:
            raise McpConfigError(f"no MCP server named {server!r}")
        for name in [server] if server else list(self._configs):
            async with self._locks[name]:
                conn = self._running.pop(name, None)
                self._tools.pop(name, None)
                self._failed.pop(name, None)
            if conn is not None:
                await self._close(conn)

    async def close(self, report: Report | None = None) -> None:
        """Stop every server and wait for them to end. Idempotent."""
        was_running = [] if self._closed else list(self._running)
        self._closed = True
        self._running.clear()
        self._tools.clear()
        await asyncio.gather(*(self._close(c) for c in list(self._open)), *self._closing)
        stopped = [McpServerStatus(n, "stopped", f"MCP server {n!r} stopped") for n in was_running]
        await _report(report, stopped)

    async def _find_after_listing(self, qualified: str, report: Report | None) -> McpTool | None:
        await self.tools(report)
        return self.find(qualified)

    def _unknown(self, qualified: str) -> str:
        for name, (_, why) in self._failed.items():
            if qualified.startswith(f"mcp__{name}__"):
                return f"{why}; {qualified} was not called"
        known = ", ".join(t.qualified for ts in self._tools.values() for t in ts.values())
        return f"unknown MCP tool {qualified!r}; the MCP tools are: {known or 'none'}"

    async def _call(
        self, tool: McpTool, arguments: dict[str, Any], report: Report | None
    ) -> tuple[str, bool]:
        server = tool.server
        restarted = False
        while True:
            status = await self._ensure(server)
            await _report(report, [status])
            restarted = restarted or (status is not None and status.state == "restarted")
            conn = self._running.get(server)
            if conn is None:
                return self._unknown(tool.qualified), True
            timeout = self._configs[server].tool_timeout or self._call_timeout
            try:
                return result_text(await conn.call(tool.name, arguments, timeout))
            except ServerGone as gone:
                if restarted:
                    return f"MCP server {server!r} stopped again during the call", True
                if gone.during:
                    return await self._stopped_during_call(server, report), True
                # It died before the call reached it: the next turn of the loop
                # restarts it and makes the call there.
            except TimeoutError:
                return (
                    f"{tool.qualified} did not finish within {timeout:g} s; "
                    "the MCP server was told to cancel it",
                    True,
                )
            except Exception as exc:  # MCPError, schema mismatch (RuntimeError), bad response
                log.debug("MCP tool %s failed", tool.qualified, exc_info=True)
                return f"{tool.qualified} failed: {_error_text(exc)}", True

    async def _stopped_during_call(self, server: str, report: Report | None) -> str:
        # The call is not repeated: the tool may have done part of its work. The
        # server is restarted now so that the model's next try finds it running.
        status = await self._ensure(server)
        await _report(report, [status])
        if status is not None and status.state == "failed":
            return f"MCP server {server!r} stopped during the call; {status.message}"
        return f"MCP server {server!r} stopped during the call (restarted; try again)"

    async def _ensure(self, name: str) -> McpServerStatus | None:
        """Start ``name`` unless it runs (or failed lately); re-list its tools if it
        said they changed. The status, when there is news."""
        async with self._locks[name]:
            if self._closed:
                return None
            conn = self._running.get(name)
            if conn is not None and conn.alive:
                if conn.tools_changed:
                    await self._relist(name, conn)
                return None
            failed = self._failed.get(name)
            if failed is not None and time.monotonic() - failed[0] < RETRY_FAILED_AFTER:
                return None
            previous = self._running.pop(name, None)
            why = None
            if previous is not None:
                why = previous.describe_exit()  # before close() takes its stderr away
                self._close_later(previous)
            return await self._start(name, why)

    async def _start(self, name: str, stopped_because: str | None) -> McpServerStatus:
        """Start ``name``: ``stopped_because`` says why its last run ended, if it ran."""
        conn = McpConnection(self._configs[name])
        self._open.add(conn)
        try:
            listed = await conn.start(self._start_timeout)
        except StartFailed as exc:
            self._close_later(conn)
            self._tools.pop(name, None)
            message = f"MCP server {name!r} failed to start: {exc}"
            self._failed[name] = (time.monotonic(), message)
            return McpServerStatus(name, "failed", message)
        except BaseException:  # cancelled while starting: the server must not outlive it
            self._close_later(conn)
            raise
        self._failed.pop(name, None)
        self._running[name] = conn
        self._tools[name] = _by_qualified(name, listed)
        count = len(self._tools[name])
        if stopped_because is None:
            return McpServerStatus(
                name, "ready", f"MCP server {name!r} ready: {count} tools", count
            )
        message = (
            f"MCP server {name!r} stopped ({stopped_because}) and was restarted: {count} tools"
        )
        return McpServerStatus(name, "restarted", message, count)

    async def _relist(self, name: str, conn: McpConnection) -> None:
        try:
            async with asyncio.timeout(self._start_timeout):
                listed = await conn.list_tools()
        except Exception as exc:  # keep the old list; a dead server is restarted on use
            conn.tools_changed = True
            log.warning("MCP server %r: could not re-list its tools: %s", name, _error_text(exc))
            return
        self._tools[name] = _by_qualified(name, listed)

    def _close_later(self, conn: McpConnection) -> None:
        # A failed or dead server's teardown can take seconds (the SDK waits for the
        # process); the caller need not wait, but close() does.
        name = f"closing MCP server {conn.config.name}"
        run_task(self._close(conn), name=name, keep=self._closing)

    async def _close(self, conn: McpConnection) -> None:
        try:
            await conn.close()
        finally:
            self._open.discard(conn)


async def _report(report: Report | None, statuses: Iterable[McpServerStatus | None]) -> None:
    for status in statuses:
        if status is not None and report is not None:
            await report(status)


def _by_qualified(server: str, listed: Iterable[Any]) -> dict[str, McpTool]:
    tools: dict[str, McpTool] = {}
    for sdk_tool in listed:
        tool = from_sdk(server, sdk_tool)
        if tool.qualified in tools:
            log.warning("MCP server %r lists tool %r twice; the first is used", server, tool.name)
            continue
        tools[tool.qualified] = tool
    return tools


def _error_text(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(message)
