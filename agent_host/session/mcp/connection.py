"""One running MCP server: its process or HTTP connection and its client session.

The SDK's transports and ``ClientSession`` are anyio context managers that must be
entered and exited in the same task, so each connection has an owner task that
enters them, publishes the session and waits until it is told to stop or the
server goes away; any task may then call tools through the session. The SDK is
imported here, when a server starts, never when the package is imported.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from ... import __version__
from ..environment import current_policy
from ..errors import SandboxUnavailable
from ..redaction import SECRETS
from ..sandbox import Sandbox, current_roots, sandbox_in_force
from ..workspace import processes
from .config import McpServerConfig, safe_url

if TYPE_CHECKING:
    from mcp import ClientSession, types

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 10.0  # the SDK gives a stdio server 2 s after stdin closes, then signals
PING_TIMEOUT = 2.0
EXIT_POLL = 0.2  # how often a stdio server's process is checked for having exited
PIPE_GRACE = 1.0
"""How long a stdio server's output may stay open after its process exited (what it
wrote last is still read) before a process it left behind is taken to hold it."""
_STDERR_TAIL = 4096
_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0  # a tool may stream nothing for minutes while it works


class StartFailed(Exception):
    """A server that could not be started; the message says why, without secrets."""


class ServerGone(Exception):
    """The server stopped before (``during`` False) or during a call."""

    def __init__(self, during: bool) -> None:
        super().__init__("the MCP server stopped")
        self.during = during


class McpConnection:
    """One MCP server, started once by :meth:`start` and ended by :meth:`close`."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        # Set by the server's tools/list_changed, whatever its capabilities claimed.
        self.tools_changed = False
        self._own_sandbox: Sandbox | None = None
        """The sandbox of a server configured with its own (its temp goes with it)."""
        self.confined = False
        """Its process runs in a sandbox (a stdio server under a confining policy);
        False for one that is not, and for a remote (HTTP) server, which runs
        wherever it runs."""
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()  # the session is published, or the owner ended
        self._ending = asyncio.Event()  # close() was called, or the server went away
        self._eof = False
        self._failure: Exception | None = None
        self._phase = "start"
        self._owner: asyncio.Task[None] | None = None
        self._process: Any = None  # a stdio server's process, once spawned
        self._watcher: asyncio.Task[None] | None = None
        # The server's stderr goes to a real file (the SDK hands it to the child) so
        # that a failure can quote its last line.
        self._stderr = tempfile.TemporaryFile("w+b") if config.transport == "stdio" else None

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._ending.is_set()

    async def start(self, timeout: float) -> list[types.Tool]:
        """Spawn or connect, initialize and list the tools, all within ``timeout``
        seconds. Raises :class:`StartFailed`; the caller closes the connection."""
        # The SDK (pydantic models, httpx) takes a second or more to import: in a
        # thread, so the event loop answers meanwhile, and before the clock starts.
        await asyncio.to_thread(_import_sdk)
        self._owner = asyncio.create_task(self._own(), name=f"MCP server {self.config.name}")
        try:
            async with asyncio.timeout(timeout):
                await self._ready.wait()
                if self._session is None:
                    raise StartFailed(self._describe(self._failure))
                self._phase = "list its tools"
                return await self.list_tools()
        except TimeoutError:
            raise StartFailed(f"did not {self._phase} within {timeout:g} s") from None
        except StartFailed:
            raise
        except Exception as exc:  # the SDK's errors come in many types; each is described
            raise StartFailed(self._describe(exc)) from exc

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the server lists, following its pages."""
        from mcp import types

        session = self._require_session()
        self.tools_changed = False
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(
        self, name: str, arguments: dict[str, Any], timeout: float | None
    ) -> types.CallToolResult:
        """Call a tool. Raises :class:`ServerGone` if the server stopped, TimeoutError
        after ``timeout`` (the SDK tells the server to cancel), or the SDK's errors."""
        from mcp import MCPError, types

        if not self.alive:
            raise ServerGone(during=False)
        session = self._require_session()
        try:
            async with asyncio.timeout(timeout):
                return await session.call_tool(name, arguments)
        except MCPError as exc:
            # CONNECTION_CLOSED is also what an HTTP stream cut short says: the
            # server is gone only if it no longer answers a ping either.
            if exc.code == types.CONNECTION_CLOSED and not await self._responds():
                self._ending.set()  # the owner tears down what is left of it
                raise ServerGone(during=True) from exc
            raise

    def describe_exit(self) -> str:
        """Why the server went away, for a message."""
        return self._describe(self._failure) if self._failure else self._exited()

    async def close(self) -> None:
        """Stop the server and wait for its process to end. Idempotent."""
        self._ending.set()
        owner = self._owner
        if owner is not None:
            if self._session is None:
                # Failed or still starting: no grace for a server that never became
                # one; all of it ends now, then only a cancel stops the owner.
                self._end_process_session()
                owner.cancel()
            done, _ = await asyncio.wait({owner}, timeout=CLOSE_TIMEOUT)
            if not done:
                log.warning("MCP server %r did not stop in time; cancelling", self.config.name)
                owner.cancel()
                await asyncio.wait({owner})
            if not owner.cancelled() and owner.exception() is not None:
                log.debug("MCP server %r owner ended with an error", self.config.name)
        if self._stderr is not None:
            self._stderr.close()
        if self._own_sandbox is not None:
            self._own_sandbox.close()

    async def _own(self) -> None:
        from mcp import ClientSession, types

        try:
            async with AsyncExitStack() as stack:
                read, write = await self._open(stack)
                session = await stack.enter_async_context(
                    ClientSession(
                        _EofWatch(read, self._on_eof),
                        write,
                        message_handler=self._on_message,
                        client_info=types.Implementation(name="agent-host", version=__version__),
                    )
                )
                self._phase = "answer initialize"
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._ending.wait()
        except Exception as exc:  # ExceptionGroups from anyio included: start() reports it
            self._failure = exc
            log.debug("MCP server %r ended: %r", self.config.name, exc)
        finally:
            self._session = None
            self._ending.set()
            self._ready.set()
            if self._watcher is not None:
                self._watcher.cancel()
            # The SDK kills the process group only when the server outlived its grace;
            # what a server that exited left running (in its session) ends here.
            self._end_process_session()
            if self._process is not None:
                processes.forget_session(self._process.pid)

    def _spawned(self, process: Any) -> None:
        """The SDK started the server: kill it if the host dies, watch it exit."""
        self._process = process
        processes.watch_session(process.pid)  # it leads its own session: the pid is the session id
        self._watcher = asyncio.create_task(
            self._watch_exit(process), name=f"MCP server {self.config.name} exit"
        )

    async def _watch_exit(self, process: Any) -> None:
        """When the server's process has exited but its output stays open (something
        it started holds it), close our end: the SDK then sees the end it would have
        seen, and a call in flight fails instead of waiting for ever."""
        while process.returncode is None:
            await asyncio.sleep(EXIT_POLL)
        try:
            async with asyncio.timeout(PIPE_GRACE):
                await self._ending.wait()
            return  # its output ended with it (or we are closing it)
        except TimeoutError:
            pass
        log.debug("MCP server %r exited; a process it left holds its output", self.config.name)
        self._eof = True
        await process.stdout.aclose()

    def _end_process_session(self) -> None:
        if self._process is not None:
            processes.kill_session(self._process.pid)

    async def _open(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        config = self.config
        if config.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client

            from . import line_reader, spawn

            line_reader.install()
            spawn.install()
            spawn.on_spawn.set(self._spawned)  # this (the owner) task's context only
            self._phase = "spawn"
            # The host's command environment policy (secrets out), its own env
            # over it. (The SDK adds HOME, PATH, ... back if a policy dropped them.)
            env = {**current_policy.get().environment(), **dict(config.env)}
            command, args, env = self._confined(config.command or "", list(config.args), env)
            params = StdioServerParameters(command=command, args=args, env=env, cwd=config.cwd)
            # Typed TextIO, but the SDK only hands it to the process as its stderr.
            errlog = cast(TextIO, self._stderr)
            return await stack.enter_async_context(stdio_client(params, errlog=errlog))
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        self._phase = "connect"
        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT),
            )
        )
        return await stack.enter_async_context(
            streamable_http_client(config.url or "", http_client=client)
        )

    def _confined(
        self, command: str, args: list[str], env: dict[str, str]
    ) -> tuple[str, list[str], dict[str, str]]:
        """The server's command line under its sandbox (its own, else the session's);
        a command that is not found is left as it is, so that the spawn fails and
        says so. SandboxUnavailable when it cannot be confined."""
        own = self.config.sandbox
        chosen = sandbox_in_force()
        if own is not None:
            chosen = chosen.with_policy(own)
            self._own_sandbox = chosen
        found = shutil.which(command, path=env.get("PATH", os.defpath))
        if found is None or not chosen.policy.confined:
            return command, args, env
        cwd = Path(self.config.cwd or os.getcwd())
        roots = list(current_roots.get()) or [cwd]
        launch = chosen.launch([found, *args], roots=roots, cwd=cwd, env=env, preexec=False)
        self.confined = launch.confined
        return launch.argv[0], launch.argv[1:], launch.env

    async def _on_message(self, message: object) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.tools_changed = True

    def _on_eof(self) -> None:
        self._eof = True
        self._ending.set()

    async def _responds(self) -> bool:
        session = self._session
        if session is None or self._ending.is_set():
            return False
        try:
            async with asyncio.timeout(PING_TIMEOUT):
                await session.send_ping()
        except Exception:  # whatever the transport raises, the answer is "no"
            return False
        return True

    def _require_session(self) -> ClientSession:
        if self._session is None:
            raise ServerGone(during=False)
        return self._session

    def _describe(self, exc: BaseException | None) -> str:
        """A failure as text: what the server did, never an env or header value."""
        import httpx2
        from mcp import MCPError, types

        leaf = _leaf(exc)
        config = self.config
        if isinstance(leaf, SandboxUnavailable):
            text = f"not started: {leaf}"
        elif isinstance(leaf, FileNotFoundError):
            if config.cwd and leaf.filename == config.cwd:
                text = f"working directory {config.cwd!r} does not exist"
            else:
                text = f"command {config.command!r} not found"
        elif isinstance(leaf, PermissionError):
            text = f"command {config.command!r} cannot be run: permission denied"
        elif isinstance(leaf, httpx2.ConnectError):
            text = f"cannot connect to {safe_url(config.url or '')}: {leaf}"
        elif isinstance(leaf, httpx2.HTTPStatusError):
            text = f"{safe_url(config.url or '')} answered HTTP {leaf.response.status_code}"
        elif self._eof or (isinstance(leaf, MCPError) and leaf.code == types.CONNECTION_CLOSED):
            text = self._exited()
        elif isinstance(leaf, MCPError):
            text = f"error {leaf.code}: {leaf.message}"
        elif leaf is None:
            text = "ended without saying why"
        else:
            text = f"{type(leaf).__name__}: {leaf}"
        return self._redact(text)

    def _exited(self) -> str:
        if self.config.transport == "http":
            return f"closed the connection to {safe_url(self.config.url or '')}"
        line = _last_line(self._stderr)
        return self._redact(f"exited: {line}" if line else "exited without a message on stderr")

    def _redact(self, text: str) -> str:
        # Servers print their config when they fail; short values would garble the text.
        for secret in self.config.secrets():
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return SECRETS.mask(text)


class _EofWatch:
    """A transport's read stream that calls ``on_eof`` when it ends: the SDK's session
    does not end when its server does, and calls only fail once they are made."""

    def __init__(self, inner: Any, on_eof: Any) -> None:
        self._inner = inner
        self._on_eof = on_eof

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __aiter__(self) -> _EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except BaseException:  # end of stream, closed, or cancelled: no more messages
            self._on_eof()
            raise

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException:
            self._on_eof()
            raise

    async def __aenter__(self) -> _EofWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._inner.__aexit__(*exc)


def _import_sdk() -> None:
    import httpx2  # noqa: F401
    import mcp.client.stdio  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401


def _leaf(exc: BaseException | None) -> BaseException | None:
    """The error that says most inside anyio's nested ExceptionGroups: the cause
    (a missing command, a refused connection) before the SDK's "connection closed"."""
    leaves = []
    stack = [exc]
    while stack:
        item = stack.pop(0)
        if isinstance(item, BaseExceptionGroup):
            stack.extend(item.exceptions)
        elif item is not None:
            leaves.append(item)
    causes = [e for e in leaves if isinstance(e, OSError) or type(e).__module__.startswith("httpx")]
    return next(iter(causes or leaves), None)


def _last_line(file: Any) -> str:
    """The last non-empty line the server wrote to ``file``, at most 300 characters."""
    if file is None or file.closed:
        return ""
    fd = file.fileno()
    size = os.fstat(fd).st_size
    # pread: the child shares the file offset, so seeking would misplace its writes.
    tail = os.pread(fd, _STDERR_TAIL, max(0, size - _STDERR_TAIL))
    lines = [line.strip() for line in tail.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:300] if lines else ""
