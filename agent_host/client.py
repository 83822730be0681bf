"""A client for ``agent-host serve``: the server as a child process, over stdio.

This is the path a CI job takes (and what the ``agent-host`` commands use): spawn
``python -m agent_host serve``, ``initialize`` with the store, model and approval
policy as ``initializationOptions`` and the workspace as ``rootUri``, call
``session/*`` methods, then ``shutdown`` and ``exit``. Params and results are
plain JSON (camelCase dicts), exactly as on the wire.

The child's stderr is always read (a full pipe would stall it): with ``verbose``
each line is forwarded to our stderr as it arrives, otherwise the last lines are
kept and shown if the child dies.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from . import __version__
from .rpc import methods
from .server.protocol import plain_params_converter
from .session.errors import AgentHostError
from .session.providers.limits import SETTINGS as LIMIT_SETTINGS

log = logging.getLogger(__name__)

STDERR_LINES = 40
"""How many of the child's last stderr lines are kept for an error report."""
MAX_LINE = 16384
"""A longer stderr line is kept in pieces."""
SHUTDOWN_TIMEOUT = 10.0
"""Seconds the child gets to answer shutdown and exit before it is terminated."""

EventHandler = Callable[[dict[str, Any]], None]
PermissionHandler = Callable[[dict[str, Any]], Awaitable[str]]


def server_command(verbose: bool = False) -> list[str]:
    """``agent-host serve`` with this interpreter, so a venv's server is the one run."""
    return [sys.executable, "-m", "agent_host", *(["-v"] if verbose else []), "serve"]


class ServerError(AgentHostError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.method = method
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "data": self.data}


class ServerExited(AgentHostError):
    """The server process ended (or could not start) before it answered."""

    def __init__(self, message: str, stderr_tail: list[str]) -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


class AgentClient:
    """One ``agent-host serve`` child and the JSON-RPC connection to it.

    Use as ``async with AgentClient(...) as client: await client.request(...)``.
    """

    def __init__(
        self,
        *,
        store: str | None = None,
        model: str | None = None,
        approval: str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        verbose: bool = False,
        on_event: EventHandler | None = None,
        on_permission: PermissionHandler | None = None,
        on_message: Callable[[str], None] | None = None,
        command: list[str] | None = None,
        mcp_servers: list[dict[str, Any]] | None = None,
        shell_environment: dict[str, Any] | None = None,
        model_limits: Mapping[str, Any] | None = None,
        sandbox: str | dict[str, Any] | None = None,
    ) -> None:
        given = {"store": store, "model": model, "approval": approval}
        self.options: dict[str, Any] = {k: v for k, v in given.items() if v}
        for setting in LIMIT_SETTINGS:  # AgentHost's model_* arguments, by their wire names
            value = (model_limits or {}).get(setting.option)
            if value is not None:
                self.options[setting.wire] = value
        if mcp_servers:
            self.options["mcpServers"] = mcp_servers
        if shell_environment is not None:
            self.options["shellEnvironment"] = shell_environment
        if sandbox is not None:
            self.options["sandbox"] = sandbox
        self.workspace = Path(workspace or os.getcwd()).resolve()
        self.verbose = verbose
        self.on_event = on_event
        self.on_permission = on_permission
        self.on_message = on_message
        self.command = command or server_command(verbose)
        self.capabilities: dict[str, Any] = {}
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._lsp = self._make_client()
        self._process: asyncio.subprocess.Process | None = None
        self.exit_code: int | None = None
        """The child's exit code once closed; negative: ended by that signal."""
        self.clean_exit = True
        """False if the child exited by itself with an error, or had to be killed."""

    # -- lifecycle

    async def __aenter__(self) -> AgentClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> dict[str, Any]:
        """Spawn and initialize the server; returns ``capabilities.experimental.agentHost``."""
        cmd, *args = self.command
        try:
            # A new session: a Ctrl-C in the terminal reaches us, not the child, so
            # we can cancel the turn politely and the child closes its log itself.
            await self._lsp.start_io(cmd, *args, start_new_session=True)
        except OSError as exc:
            raise ServerExited(f"cannot start the server ({cmd}): {exc}", []) from None
        self._process = self._lsp._server
        assert self._process is not None and self._process.stderr is not None
        self._stderr_task = asyncio.create_task(self._read_stderr(self._process.stderr))
        params = lsp.InitializeParams(
            process_id=os.getpid(),
            client_info=lsp.ClientInfo(name="agent-host-cli", version=__version__),
            capabilities=lsp.ClientCapabilities(),
            root_uri=self.workspace.as_uri(),
            workspace_folders=[
                lsp.WorkspaceFolder(uri=self.workspace.as_uri(), name=self.workspace.name)
            ],
            initialization_options=self.options,
        )
        try:
            result = await self._call(lambda: self._lsp.initialize_async(params), lsp.INITIALIZE)
        except ServerError as exc:
            # initialize is pygls's own handler: its errors read "module.Class: message"
            exc.message = _strip_exception_name(exc.message)
            exc.args = (exc.message,)
            raise
        self._lsp.initialized(lsp.InitializedParams())
        experimental = result.capabilities.experimental or {}
        self.capabilities = (
            experimental.get("agentHost", {}) if isinstance(experimental, dict) else {}
        )
        return self.capabilities

    async def close(self) -> None:
        """shutdown and exit; a child that does not leave in time is terminated, then killed."""
        process = self._process
        if process is None:
            return
        self._process = None
        died = process.returncode is not None
        if not died:
            try:
                await asyncio.wait_for(self._lsp.shutdown_async(None), SHUTDOWN_TIMEOUT)
                self._lsp.exit(None)
            except (TimeoutError, Exception) as exc:
                log.debug("shutdown failed: %r", exc)
        stopped = await _end_process(process)
        self.exit_code = process.returncode
        self.clean_exit = not stopped and process.returncode == 0
        self._lsp._stop_event.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._lsp.stop(), SHUTDOWN_TIMEOUT)
        await self._drain_stderr()

    def kill(self) -> None:
        """End the child at once (a second Ctrl-C); close() still reaps it."""
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()

    @property
    def returncode(self) -> int | None:
        process = self._process or self._lsp._server
        return None if process is None else process.returncode

    def stderr_tail(self) -> list[str]:
        """The child's last stderr lines (all of them were forwarded with ``verbose``)."""
        return list(self._tail)

    # -- calls

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Call ``method``; its result as plain JSON, or ServerError / ServerExited."""
        return await self._call(
            lambda: self._lsp.protocol.send_request_async(method, params or {}), method
        )

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        if self.returncode is None:
            self._lsp.protocol.notify(method, params or {})

    def cancel(self, session_id: str) -> None:
        """``session/cancel``: the running turn ends with stopReason "cancelled"."""
        self.notify(methods.CANCEL, {"sessionId": session_id})

    async def _call(self, send: Callable[[], Awaitable[Any]], method: str) -> Any:
        try:
            return await send()
        except JsonRpcException as exc:
            raise ServerError(method, exc.code, exc.message, exc.data) from None
        except (RuntimeError, OSError):
            # pygls fails every pending request with RuntimeError when the child exits;
            # writing to a child that is gone raises BrokenPipeError.
            process = self._lsp._server
            if process is None:
                raise
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), 5.0)
            if process.returncode is None:
                raise
            await self._drain_stderr()
            raise ServerExited(
                f"the server exited (code {process.returncode}) before it answered {method}",
                self.stderr_tail(),
            ) from None

    # -- plumbing

    def _make_client(self) -> LanguageClient:
        client = LanguageClient(
            "agent-host-cli", __version__, converter_factory=plain_params_converter
        )

        @client.feature(methods.EVENT)
        def event(params: Any) -> None:
            if self.on_event is not None and isinstance(params, dict):
                self.on_event(params)

        @client.feature(methods.REQUEST_PERMISSION)
        async def permission(params: Any) -> dict[str, str]:
            if self.on_permission is None or not isinstance(params, dict):
                return {"outcome": "reject_once"}
            return {"outcome": await self.on_permission(params)}

        @client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def show_message(params: Any) -> None:
            message = getattr(params, "message", None)
            if message and self.on_message is not None:
                self.on_message(message)

        @client.feature(lsp.WINDOW_LOG_MESSAGE)
        def log_message(params: Any) -> None:
            message = getattr(params, "message", None)
            if message:
                self._keep(f"[log] {message}")

        return client

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        # read() not readline(): a line longer than the stream's limit must not stop
        # the draining (the child would block on a full pipe)
        pending = b""
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                if pending:
                    self._keep(pending.decode("utf-8", "replace"))
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                self._keep(line.decode("utf-8", "replace").rstrip("\r"))
            if len(pending) > MAX_LINE:
                self._keep(pending.decode("utf-8", "replace") + "…")
                pending = b""

    def _keep(self, line: str) -> None:
        self._tail.append(line)
        if self.verbose:
            print(f"[server] {line}", file=sys.stderr, flush=True)

    async def _drain_stderr(self) -> None:
        if self._stderr_task is not None:
            with contextlib.suppress(Exception, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 2.0)


async def _end_process(process: asyncio.subprocess.Process) -> bool:
    """Wait for the child to leave, terminating then killing it; True if it had to be."""
    for stop in (None, process.terminate, process.kill):
        if stop is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                stop()
        try:
            await asyncio.wait_for(process.wait(), SHUTDOWN_TIMEOUT / 2)
            return stop is not None
        except TimeoutError:
            continue
    return True


def _strip_exception_name(message: str) -> str:
    return re.sub(r"^(?:[A-Za-z_][\w]*\.)+[A-Za-z_]\w*: ", "", message)
