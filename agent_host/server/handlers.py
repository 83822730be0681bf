"""The LSP dialect's ``session/*`` requests: one function each, over the service.

Each takes the server and its typed params (``rpc.METHOD_TYPES``) and returns its
typed result; the conversion to and from the wire and the mapping of errors are
done once, where :func:`create_server` registers them (``app.py``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pygls.uris import to_fs_path

from ..rpc import methods
from ..rpc import types as rpc
from ..rpc.converter import InvalidParams
from ..service import ContextItem
from ..session.host import new_session_id
from .progress import progress

if TYPE_CHECKING:
    from .app import AgentServer

Handler = Callable[["AgentServer", Any], Awaitable[Any]]


async def new(server: AgentServer, params: rpc.NewParams) -> rpc.NewResult:
    session_id = await server.sessions().new(
        model=params.model, title=params.title, mcp_servers=params.mcp_servers
    )
    return rpc.NewResult(session_id)


async def send(server: AgentServer, params: rpc.SendParams) -> rpc.SendResult:
    service = server.sessions()
    session_id = params.session_id or new_session_id()
    context = [ContextItem(c.text, c.uri) for c in params.context or []]
    async with progress(server, f"agent-host: {params.prompt[:40]}", session_id):
        done = await service.send(
            session_id, params.prompt, context=context, model=params.model, create=True
        )
    result = done.result
    return rpc.SendResult(
        session_id=result.session_id,
        checkpoint=result.checkpoint,
        stop_reason=result.stop_reason,  # type: ignore[arg-type]
        text=result.text,
        usage=rpc.Usage(result.usage.input_tokens, result.usage.output_tokens),
        cost=result.cost,
        total_cost=done.total_cost,
    )


async def list_sessions(server: AgentServer, params: rpc.ListParams) -> rpc.ListResult:
    folder = params.workspace
    if folder is not None and folder.startswith("file:"):
        folder = to_fs_path(folder)
    if folder is not None and not folder:
        raise InvalidParams("workspace: give a folder path or file:// URI (omit it for all)")
    service = server.sessions()
    if folder is not None:
        folder = os.path.join(service.roots[0], folder)  # relative to the workspace
    try:
        page = await service.list(cwd=folder, cursor=params.cursor, limit=params.limit)
    except ValueError as exc:  # limit or cursor, named by the service
        raise InvalidParams(str(exc)) from None
    sessions = [
        rpc.SessionSummary(
            i.id, i.title, iso(i.created_at), iso(i.updated_at), i.turns, i.head, i.workspace
        )
        for i in page.sessions
    ]
    return rpc.ListResult(sessions, page.next_cursor)


async def resume(server: AgentServer, params: rpc.SessionParams) -> rpc.ResumeResult:
    done = await server.sessions().resume(params.session_id)
    return rpc.ResumeResult(done.session_id, done.head, done.turns)


async def history(server: AgentServer, params: rpc.HistoryParams) -> rpc.HistoryResult:
    return rpc.HistoryResult(await server.sessions().history(params.session_id, params.limit))


async def delete(server: AgentServer, params: rpc.SessionParams) -> None:
    await server.sessions().delete(params.session_id)


async def checkpoints(server: AgentServer, params: rpc.SessionParams) -> rpc.CheckpointsResult:
    found = await server.sessions().checkpoints(params.session_id)
    return rpc.CheckpointsResult(
        [
            rpc.CheckpointInfo(
                c.seq,
                c.prompt,
                iso(c.created_at),
                c.files,
                c.from_commands,
                c.not_captured,
                c.external_tools,
            )
            for c in found
        ]
    )


async def restore(server: AgentServer, params: rpc.RestoreParams) -> rpc.RestoreResult:
    done = await server.sessions().restore(
        params.session_id,
        params.seq,
        files=params.files,
        conversation=params.conversation,
        force=params.force,
    )
    return rpc.RestoreResult(
        done.restored_files,
        done.removed_events,
        done.unreverted_buffers,
        done.conflicts,
        done.not_captured,
    )


async def undo_restore(server: AgentServer, params: rpc.SessionParams) -> rpc.UndoRestoreResult:
    done = await server.sessions().undo_restore(params.session_id)
    return rpc.UndoRestoreResult(
        done.restored_files, done.restored_events, done.unreverted_buffers, done.conflicts
    )


async def compact(server: AgentServer, params: rpc.CompactParams) -> rpc.CompactResult:
    async with progress(server, "agent-host: compacting"):
        done = await server.sessions().compact(params.session_id, params.instructions)
    return rpc.CompactResult(done.before, done.after, done.compacted)


async def fork(server: AgentServer, params: rpc.ForkParams) -> rpc.ForkResult:
    fork_id = await server.sessions().fork(params.session_id, params.seq, title=params.title)
    return rpc.ForkResult(fork_id)


async def close(server: AgentServer, params: rpc.SessionParams) -> None:
    await server.sessions().close(params.session_id)


REQUEST_HANDLERS: dict[str, Handler] = {
    methods.NEW: new,
    methods.SEND: send,
    methods.LIST: list_sessions,
    methods.RESUME: resume,
    methods.HISTORY: history,
    methods.DELETE: delete,
    methods.CHECKPOINTS: checkpoints,
    methods.RESTORE: restore,
    methods.UNDO_RESTORE: undo_restore,
    methods.COMPACT: compact,
    methods.FORK: fork,
    methods.CLOSE: close,
}
"""Every request of ``methods.REQUESTS``, by name (a test checks they are the same)."""


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")
