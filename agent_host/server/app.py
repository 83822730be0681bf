"""The stdio server: the LSP dialect over the session service.

:class:`AgentServer` is the LSP front end's client port (turn updates as
``session/event``, permissions as ``session/requestPermission``, the editor's
buffers through :class:`EditorWorkspace`); :func:`create_server` registers the
lifecycle and, for each client method of the table (``rpc.methods.TABLE``), its
handler (``handlers.HANDLERS``): params structured from plain JSON (protocol.py)
into the row's params type, results unstructured, errors mapped in
``protocol.to_wire`` -- once, here.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..rpc import methods
from ..rpc import types as rpc
from ..rpc.converter import InvalidParams, camel, structure, unstructure
from ..rpc.methods import Method
from ..service import SessionService
from ..service.port import SessionChanged
from ..session import events as ev
from ..session.approval import PermissionRequest
from ..session.compaction import CompactionProgress
from ..session.environment import ShellEnvironmentError
from ..session.errors import SandboxConfigError
from ..session.model import ModelWait, TextDelta
from ..session.providers.limits import SETTINGS as LIMIT_SETTINGS
from ..session.providers.registry import DEFAULT_MODEL
from ..session.redaction import warm
from ..session.workspace import DiskWorkspace, Workspace
from .editor import EditorWorkspace
from .handlers import HANDLERS, Handler
from .protocol import AgentProtocol, plain_params_converter, to_wire

log = logging.getLogger(__name__)


class AgentServer(LanguageServer):
    """A language server whose features are the agent's sessions."""

    def __init__(self) -> None:
        super().__init__(
            "agent-host",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=AgentProtocol,
            converter_factory=plain_params_converter,
        )
        self.service: SessionService | None = None
        self.options = rpc.InitializationOptions()
        self.progress_sessions: dict[str, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        """Work-done progress tokens of running turns, by token: cancelling one cancels its turn."""

    def close_on_hang_up(self, timeout: float = 15.0) -> None:
        """From the stdin reader's thread at EOF: close the host on the event loop and
        wait, so running turns close their logs before pygls stops the loop."""
        loop, service = self._loop, self.service
        if loop is None or service is None or loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(service.shutdown(), loop).result(timeout)
        except Exception:
            log.exception("closing the sessions at hang-up failed")

    def sessions(self) -> SessionService:
        if self.service is None:
            raise InvalidParams("the server is not initialized: send initialize first")
        return self.service

    def client_supports(self, *path: str) -> bool:
        node: Any = self.client_capabilities
        for name in path:
            node = getattr(node, name, None)
            if node is None:
                return False
        return bool(node)

    async def ask_permission(self, request: PermissionRequest) -> str:
        params = rpc.PermissionParams(
            session_id=request.session_id,
            tool=request.tool,
            kind="external" if request.kind.startswith("external") else request.kind,  # type: ignore[arg-type]
            arguments=request.arguments,
            diff=request.diff,
            proposed=request.after,
            sandbox_denial=request.sandbox_denial,
        )
        msg_id = str(uuid.uuid4())
        pending = self.protocol.send_request_async(
            methods.REQUEST_PERMISSION, unstructure(params), msg_id=msg_id
        )
        try:
            # Shielded: if the turn is cancelled, the request stays pending until
            # the client answers the $/cancelRequest, rather than being dropped.
            answer = await asyncio.shield(pending)
        except asyncio.CancelledError:
            pending.add_done_callback(_consume)
            self.protocol.notify("$/cancelRequest", {"id": msg_id})
            raise
        return structure(answer, rpc.PermissionResult).outcome

    def relay(self, session_id: str, item: object) -> None:
        """A turn's progress to the client as ``session/event`` notifications."""
        data: dict[str, Any]
        if isinstance(item, TextDelta):
            kind, data = "text_delta", {"text": item.text}
        elif isinstance(item, ev.Event):
            kind, data = _event_kind(item), {camel(k): v for k, v in ev.to_dict(item).items()}
        elif isinstance(item, CompactionProgress):
            kind, data = "compaction_progress", {"stage": item.stage, "message": item.message}
        elif isinstance(item, ModelWait):
            kind, data = "model_wait", unstructure(item)
        elif isinstance(item, SessionChanged):
            kind, data = "session_changed", {"head": item.head}
        elif type(item).__name__ == "McpServerStatus":
            # (by name: the MCP package stays out of the server's start-up until used)
            kind, data = "mcp_server", unstructure(item)
        else:
            return
        self.protocol.notify(methods.EVENT, {"sessionId": session_id, "kind": kind, "data": data})


class LspClient:
    """The LSP front end's client port (``service.ClientPort``): the engine reaches
    the editor through the server it wraps."""

    def __init__(self, server: AgentServer) -> None:
        self.server = server
        self._folders: dict[tuple[str, ...], Workspace] = {}

    def workspace(self, roots: list[Path], session_id: str | None = None) -> Workspace:
        key = tuple(str(r) for r in roots)
        folder = self._folders.get(key)
        if folder is None:
            disk = DiskWorkspace(roots)
            if self.server.client_supports("workspace", "apply_edit"):
                folder = EditorWorkspace(self.server, disk)
            else:
                folder = disk  # a client that cannot take edits: disk reads, disk writes
            self._folders[key] = folder
        if session_id is not None and isinstance(folder, EditorWorkspace):
            return folder.for_session()  # its restore's lagging buffers are its own
        return folder

    async def update(self, session_id: str, update: object) -> None:
        await warm(update)  # a 10 MB tool call masked in a thread, not as it is sent
        self.server.relay(session_id, update)

    async def request_permission(self, request: PermissionRequest) -> str:
        return await self.server.ask_permission(request)


def _consume(future: asyncio.Future) -> None:
    """Retrieve a dropped request's outcome, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


def _event_kind(event: ev.Event) -> str:
    return event.kind if isinstance(event, ev.UnknownEvent) else event.type


def create_server() -> AgentServer:
    server = AgentServer()
    for method in methods.TABLE:
        if method.direction == methods.CLIENT_TO_SERVER:
            handler = HANDLERS.get(method)
            if handler is None:
                raise LookupError(f"{method} is in the method table but has no handler")
            register(server, method, handler)

    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        server._loop = asyncio.get_running_loop()
        try:
            server.options = structure(params.initialization_options, rpc.InitializationOptions)
        except InvalidParams as exc:
            log.warning("ignoring initializationOptions: %s", exc)
            server.window_show_message(
                lsp.ShowMessageParams(
                    lsp.MessageType.Warning, f"agent-host: {exc}; using the defaults"
                )
            )
        roots = [Path(path) for f in params.workspace_folders or [] if (path := to_fs_path(f.uri))]
        if not roots and params.root_uri and (root := to_fs_path(params.root_uri)):
            roots = [Path(root)]
        if not roots:
            roots = [Path.cwd()]
        options = server.options
        try:
            server.service = SessionService(
                LspClient(server),  # type: ignore[arg-type]
                store=options.store,
                model=options.model or DEFAULT_MODEL,
                approval=options.approval,
                roots=roots,
                mcp_servers=options.mcp_servers,
                shell_environment=options.shell_environment,
                sandbox=options.sandbox,
                **{s.option: getattr(options, s.option) for s in LIMIT_SETTINGS},
                create_unknown=True,  # the dialect's: an unknown id is an empty session
            )
        except (ShellEnvironmentError, SandboxConfigError) as exc:
            raise to_wire(InvalidParams(f"initializationOptions.{exc}")) from None
        except OSError as exc:  # a workspace or store folder that cannot be used
            raise to_wire(InvalidParams(f"cannot start: {exc}")) from None
        except Exception as exc:  # a store URL no backend knows, a bad price table
            raise to_wire(exc) from None

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    async def progress_cancelled(params: lsp.WorkDoneProgressCancelParams) -> None:
        session_id = server.progress_sessions.pop(str(params.token), None)
        if session_id is not None and server.service is not None:
            await server.service.cancel(session_id)

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(params: Any) -> None:
        if server.service is not None:
            await server.service.shutdown()

    return server


def register(server: AgentServer, method: Method, handler: Handler) -> None:
    """``handler`` as the feature ``method``: params typed as the table says, plain
    JSON out, and every failure of a request a JSON-RPC error. A notification has
    nobody to answer: params that do not fit are logged and dropped."""

    if method.kind == "notification":

        @server.feature(method.name)
        @functools.wraps(handler)
        async def notified(params: Any) -> None:
            try:
                typed = structure(params, method.params)
            except InvalidParams as exc:
                log.warning("%s ignored: %s", method, exc)
                return
            await handler(server, typed)

        return

    @server.feature(method.name)
    @functools.wraps(handler)
    async def wrapped(params: Any) -> Any:
        try:
            result = await handler(server, structure(params, method.params))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise to_wire(exc) from None
        return None if result is None else unstructure(result)
