"""The stdio server: ``session/*`` methods onto :class:`AgentHost`.

Each handler validates its params (plain JSON, see protocol.py), calls the engine
and converts the result; errors become JSON-RPC errors in ``protocol.to_wire``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..rpc import methods
from ..rpc import types as rpc
from ..rpc.converter import InvalidParams, structure, unstructure
from ..session import events as ev
from ..session.approval import PermissionRequest
from ..session.compaction import CompactionProgress
from ..session.host import AgentHost, new_session_id
from ..session.model import TextDelta
from ..session.workspace import DiskWorkspace, Workspace
from .editor import EditorWorkspace, collect_unreverted
from .protocol import AgentProtocol, plain_params_converter, to_wire

log = logging.getLogger(__name__)
DEFAULT_MODEL = "openai/gpt-4.1-mini"


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
        self.host: AgentHost | None = None
        self.options = rpc.InitializationOptions()
        self.progress_sessions: dict[str, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        """Work-done progress tokens of running turns, by token: cancelling one cancels its turn."""

    def close_on_hang_up(self, timeout: float = 15.0) -> None:
        """From the stdin reader's thread at EOF: close the host on the event loop and
        wait, so running turns close their logs before pygls stops the loop."""
        loop, host = self._loop, self.host
        if loop is None or host is None or loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(host.close(), loop).result(timeout)
        except Exception:
            log.exception("closing the sessions at hang-up failed")

    def agent(self) -> AgentHost:
        if self.host is None:
            raise InvalidParams("the server is not initialized: send initialize first")
        return self.host

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
        if isinstance(item, TextDelta):
            kind, data = "text_delta", {"text": item.text}
        elif isinstance(item, ev.Event):
            kind, data = _event_kind(item), _camel_keys(ev.to_dict(item))
        elif isinstance(item, CompactionProgress):
            kind, data = "compaction_progress", {"stage": item.stage, "message": item.message}
        elif type(item).__name__ == "McpServerStatus":
            # (by name: the MCP package stays out of the server's start-up until used)
            kind, data = "mcp_server", unstructure(item)
        else:
            return
        self.protocol.notify(methods.EVENT, {"sessionId": session_id, "kind": kind, "data": data})


def _consume(future: asyncio.Future) -> None:
    """Retrieve a dropped request's outcome, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


def _event_kind(event: ev.Event) -> str:
    return event.kind if isinstance(event, ev.UnknownEvent) else event.type


def _camel_keys(data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in data.items():
        head, *rest = key.split("_")
        out[head + "".join(p.title() for p in rest)] = value
    return out


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def create_server() -> AgentServer:
    server = AgentServer()

    def method(name: str, params_type: type) -> Callable:
        """Register a handler that gets typed params; every failure is a wire error."""

        def register(handler: Callable[[Any], Awaitable[Any]]) -> Callable:
            @server.feature(name)
            @functools.wraps(handler)
            async def wrapped(params: Any) -> Any:
                try:
                    result = await handler(structure(params, params_type))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    raise to_wire(exc) from None
                return None if result is None else unstructure(result)

            return wrapped

        return register

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
        roots = [
            Path(to_fs_path(f.uri)) for f in params.workspace_folders or [] if to_fs_path(f.uri)
        ]
        if not roots and params.root_uri and to_fs_path(params.root_uri):
            roots = [Path(to_fs_path(params.root_uri))]
        if not roots:
            roots = [Path.cwd()]
        options = server.options
        try:
            workspace: Workspace = DiskWorkspace(roots)
            if server.client_supports("workspace", "apply_edit"):
                workspace = EditorWorkspace(server, workspace)  # else: disk-only
            server.host = AgentHost(
                store=options.store,
                model=options.model or DEFAULT_MODEL,
                approval=options.approval,
                workspace=workspace,
                permission=server.ask_permission,  # type: ignore[arg-type]
                on_event=server.relay,
                mcp_servers=options.mcp_servers,
            )
        except OSError as exc:  # a workspace or store folder that cannot be used
            raise to_wire(InvalidParams(f"cannot start: {exc}")) from None
        except Exception as exc:  # a store URL no backend knows, a bad price table
            raise to_wire(exc) from None

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    async def progress_cancelled(params: lsp.WorkDoneProgressCancelParams) -> None:
        session_id = server.progress_sessions.pop(str(params.token), None)
        if session_id is not None and server.host is not None:
            await server.host.cancel(session_id)

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(params: Any) -> None:
        if server.host is not None:
            await server.host.close()

    @method(methods.NEW, rpc.NewParams)
    async def new(params: rpc.NewParams) -> rpc.NewResult:
        host = server.agent()
        session_id = new_session_id()
        if params.mcp_servers is not None:
            await host.use_mcp_servers(session_id, params.mcp_servers)
        started = ev.SessionStarted(
            workspace=str(host.workspace.roots[0]),
            model=params.model or host.model,
            title=params.title,
        )
        await host.store.append(session_id, [started], expected_head=0)
        return rpc.NewResult(session_id)

    @method(methods.SEND, rpc.SendParams)
    async def send(params: rpc.SendParams) -> rpc.SendResult:
        host = server.agent()
        session_id = params.session_id or new_session_id()
        prompt = params.prompt
        if params.context:
            shown = "\n\n".join(
                f"<context uri={c.uri!r}>\n{c.text}\n</context>" if c.uri else c.text
                for c in params.context
            )
            prompt = f"{prompt}\n\n{shown}"
        async with _progress(server, f"agent-host: {params.prompt[:40]}", session_id):
            result = await host.send(prompt, session_id=session_id, model=params.model)
        return rpc.SendResult(
            session_id=result.session_id,
            checkpoint=result.checkpoint,
            stop_reason=result.stop_reason,  # type: ignore[arg-type]
            text=result.text,
            usage=rpc.Usage(result.usage.input_tokens, result.usage.output_tokens),
            cost=result.cost,
            total_cost=await host.session_cost(session_id),
        )

    @server.feature(methods.CANCEL)
    async def cancel(params: Any) -> None:
        try:
            request = structure(params, rpc.SessionParams)
        except InvalidParams as exc:
            log.warning("session/cancel ignored: %s", exc)
            return
        await server.agent().cancel(request.session_id)

    @method(methods.LIST, rpc.ListParams)
    async def list_sessions(params: rpc.ListParams) -> rpc.ListResult:
        if params.limit is not None and params.limit < 1:
            raise InvalidParams("limit: must be 1 or more (omit it for every session)")
        host = server.agent()
        folder = params.workspace
        if folder is not None and folder.startswith("file:"):
            folder = to_fs_path(folder)
        if folder is not None and not folder:
            raise InvalidParams("workspace: give a folder path or file:// URI (omit it for all)")
        if folder is not None:
            folder = os.path.join(host.workspace.roots[0], folder)  # relative to the workspace
        infos = await host.list_sessions(folder)
        start = _cursor(params.cursor)
        end = len(infos) if params.limit is None else start + params.limit
        page = [
            rpc.SessionSummary(
                i.id, i.title, _iso(i.created_at), _iso(i.updated_at), i.turns, i.head, i.workspace
            )
            for i in infos[start:end]
        ]
        return rpc.ListResult(page, str(end) if end < len(infos) else None)

    @method(methods.RESUME, rpc.SessionParams)
    async def resume(params: rpc.SessionParams) -> rpc.ResumeResult:
        state = await server.agent().resume(params.session_id)
        turns = sum(1 for e in state.timeline if type(e) is ev.UserPrompt)
        return rpc.ResumeResult(params.session_id, state.head, turns)

    @method(methods.HISTORY, rpc.HistoryParams)
    async def history(params: rpc.HistoryParams) -> rpc.HistoryResult:
        return rpc.HistoryResult(await server.agent().history(params.session_id, params.limit))

    @method(methods.DELETE, rpc.SessionParams)
    async def delete(params: rpc.SessionParams) -> None:
        await server.agent().delete_session(params.session_id)

    @method(methods.CHECKPOINTS, rpc.SessionParams)
    async def checkpoints(params: rpc.SessionParams) -> rpc.CheckpointsResult:
        found = await server.agent().list_checkpoints(params.session_id)
        return rpc.CheckpointsResult(
            [
                rpc.CheckpointInfo(
                    c.seq,
                    c.prompt,
                    _iso(c.created_at),
                    c.files,
                    c.from_commands,
                    c.not_captured,
                    c.external_tools,
                )
                for c in found
            ]
        )

    @method(methods.RESTORE, rpc.RestoreParams)
    async def restore(params: rpc.RestoreParams) -> rpc.RestoreResult:
        with collect_unreverted() as unreverted:
            done = await server.agent().restore(
                params.session_id,
                params.seq,
                files=params.files,
                conversation=params.conversation,
                force=params.force,
            )
        return rpc.RestoreResult(
            done.restored_files,
            done.removed_events,
            unreverted.paths,
            done.conflicts,
            done.not_captured,
        )

    @method(methods.UNDO_RESTORE, rpc.SessionParams)
    async def undo_restore(params: rpc.SessionParams) -> rpc.UndoRestoreResult:
        with collect_unreverted() as unreverted:
            done = await server.agent().undo_restore(params.session_id)
        return rpc.UndoRestoreResult(
            done.restored_files, done.restored_events, unreverted.paths, done.conflicts
        )

    @method(methods.COMPACT, rpc.CompactParams)
    async def compact(params: rpc.CompactParams) -> rpc.CompactResult:
        async with _progress(server, "agent-host: compacting"):
            done = await server.agent().compact(params.instructions, session_id=params.session_id)
        return rpc.CompactResult(done.before, done.after, done.compacted)

    return server


def _cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise InvalidParams(f"cursor: {cursor!r} is not a nextCursor this server returned")
    return int(cursor)


class _progress:
    """Work-done progress around a long request, when the client supports it.

    With a ``session_id`` the progress is cancellable: cancelling it cancels the turn.
    """

    def __init__(self, server: AgentServer, title: str, session_id: str | None = None) -> None:
        self.server = server
        self.title = title
        self.session_id = session_id
        self.token: str | None = None

    async def __aenter__(self) -> None:
        if not self.server.client_supports("window", "work_done_progress"):
            return
        token = str(uuid.uuid4())
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception as exc:  # the client refused a token: go on without progress
            log.debug("no work-done progress: %s", exc)
            return
        self.token = token
        cancellable = self.session_id is not None
        if cancellable:
            self.server.progress_sessions[token] = self.session_id  # type: ignore[assignment]
        self.server.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title=self.title, cancellable=cancellable)
        )

    async def __aexit__(self, *exc: object) -> None:
        if self.token is not None:
            self.server.progress_sessions.pop(self.token, None)
            self.server.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd())
