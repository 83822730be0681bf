"""The LSP dialect's client methods: one function each, over the service.

Each is marked with its row of the method table (``@handles(methods.NEW)``), takes
the server and that row's typed params and returns its typed result; the
conversion to and from the wire and the mapping of errors are done once, where
:func:`create_server` registers them (``app.py``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from pygls.uris import to_fs_path

from ..rpc import methods
from ..rpc import types as rpc
from ..rpc.converter import InvalidParams
from ..rpc.methods import Method
from ..service import ContextItem
from ..service.text import checkpoint_label, local_time
from ..session.checkpoints import Checkpoint
from ..session.host import new_session_id
from ..session.restore_plan import RestorePreview
from .progress import progress

if TYPE_CHECKING:
    from ..session.restore import RestoreResult
    from .app import AgentServer

Handler = Callable[["AgentServer", Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)

HANDLERS: dict[Method, Handler] = {}
"""Every client method's handler, by its row of ``methods.TABLE`` (a test checks
that each client method has one, and the server refuses to start without it)."""


def handles(method: Method) -> Callable[[H], H]:
    """Mark a function as the handler of ``method``."""

    def record(handler: H) -> H:
        if method in HANDLERS:
            raise ValueError(f"{method} has two handlers")
        HANDLERS[method] = handler
        return handler

    return record


@handles(methods.NEW)
async def new(server: AgentServer, params: rpc.NewParams) -> rpc.NewResult:
    session_id = await server.sessions().new(
        model=params.model, title=params.title, mcp_servers=params.mcp_servers
    )
    return rpc.NewResult(session_id)


@handles(methods.SEND)
async def send(server: AgentServer, params: rpc.SendParams) -> rpc.SendResult:
    service = server.sessions()
    # Absent starts a session; an empty string is a bad id (-32602), not "start one".
    session_id = new_session_id() if params.session_id is None else params.session_id
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


@handles(methods.LIST)
async def list_sessions(server: AgentServer, params: rpc.ListParams) -> rpc.ListResult:
    folder = params.workspace
    if folder is not None and folder.startswith("file:"):
        folder = to_fs_path(folder)
    if folder is not None and not folder:
        raise InvalidParams("workspace: give a folder path or file:// URI (omit it for all)")
    if folder is not None and "\x00" in folder:
        raise InvalidParams("workspace: a path cannot hold a NUL byte")
    service = server.sessions()
    if folder is not None:
        folder = os.path.join(service.roots[0], folder)  # relative to the workspace
    page = await service.list(cwd=folder, cursor=params.cursor, limit=params.limit)
    sessions = [
        rpc.SessionSummary(
            i.id,
            i.title,
            local_time(i.created_at),
            local_time(i.updated_at),
            i.turns,
            i.head,
            i.workspace,
        )
        for i in page.sessions
    ]
    return rpc.ListResult(sessions, page.next_cursor)


@handles(methods.RESUME)
async def resume(server: AgentServer, params: rpc.SessionParams) -> rpc.ResumeResult:
    done = await server.sessions().resume(params.session_id)
    return rpc.ResumeResult(done.session_id, done.head, done.turns, done.total_cost)


@handles(methods.HISTORY)
async def history(server: AgentServer, params: rpc.HistoryParams) -> rpc.HistoryResult:
    return rpc.HistoryResult(await server.sessions().history(params.session_id, params.limit))


@handles(methods.DELETE)
async def delete(server: AgentServer, params: rpc.SessionParams) -> None:
    await server.sessions().delete(params.session_id)


@handles(methods.CHECKPOINTS)
async def checkpoints(server: AgentServer, params: rpc.SessionParams) -> rpc.CheckpointsResult:
    found = await server.sessions().checkpoints(params.session_id)
    return rpc.CheckpointsResult([checkpoint_info(c) for c in found])


def checkpoint_info(c: Checkpoint) -> rpc.CheckpointInfo:
    return rpc.CheckpointInfo(
        c.seq,
        c.prompt,
        local_time(c.created_at),
        c.files,
        c.from_commands,
        c.not_captured,
        c.external_tools,
        c.unconfined,
        ordinal=c.ordinal,
        label=checkpoint_label(c.ordinal, c.prompt),
    )


@handles(methods.RESTORE)
async def restore(server: AgentServer, params: rpc.RestoreParams) -> rpc.RestoreResult:
    service = server.sessions()
    if params.dry_run:
        preview = await service.preview_restore(
            params.session_id,
            params.seq,
            files=params.files,
            conversation=params.conversation,
            paths=params.paths,
        )
        return preview_result(preview)
    done = await service.restore(
        params.session_id,
        params.seq,
        files=params.files,
        conversation=params.conversation,
        force=params.force,
        paths=params.paths,
    )
    return restore_result(done)


@handles(methods.CHANGES)
async def changes(server: AgentServer, params: rpc.ChangesParams) -> rpc.ChangesResult:
    found = await server.sessions().changes(
        params.session_id, seq=params.seq, from_seq=params.from_seq, to_seq=params.to_seq
    )
    return rpc.ChangesResult([rpc.FileDiff(**attrs.asdict(d, recurse=False)) for d in found])


@handles(methods.REVERT_FILES)
async def revert_files(server: AgentServer, params: rpc.RevertFilesParams) -> rpc.RestoreResult:
    done = await server.sessions().revert_files(
        params.session_id,
        params.seq,
        params.paths,
        force=params.force,
        dry_run=params.dry_run,
    )
    if isinstance(done, RestorePreview):
        return preview_result(done)
    return restore_result(done)


def restore_result(done: RestoreResult) -> rpc.RestoreResult:
    return rpc.RestoreResult(
        done.restored_files,
        done.removed_events,
        done.unreverted_buffers,
        done.conflicts,
        done.not_captured,
        unconfined=done.unconfined,
        not_restored=done.not_restored,
        messages_removed=done.messages_removed,
    )


def preview_result(preview: RestorePreview) -> rpc.RestoreResult:
    """A dry run's answer: nothing done, the preview says what would be."""
    files = [rpc.PreviewFile(**attrs.asdict(f, recurse=False)) for f in preview.files]
    shown = rpc.RestorePreview(
        files,
        preview.messages_removed,
        checkpoint_info(preview.checkpoint),
        preview.not_captured,
        preview.unconfined,
    )
    return rpc.RestoreResult([], 0, preview=shown)


@handles(methods.UNDO_RESTORE)
async def undo_restore(server: AgentServer, params: rpc.UndoRestoreParams) -> rpc.UndoRestoreResult:
    done = await server.sessions().undo_restore(params.session_id, force=params.force)
    return rpc.UndoRestoreResult(
        done.restored_files,
        done.restored_events,
        done.unreverted_buffers,
        done.conflicts,
        done.not_restored,
        messages_restored=done.messages_restored,
    )


@handles(methods.COMPACT)
async def compact(server: AgentServer, params: rpc.CompactParams) -> rpc.CompactResult:
    async with progress(server, "agent-host: compacting"):
        done = await server.sessions().compact(params.session_id, params.instructions)
    return rpc.CompactResult(done.before, done.after, done.compacted)


@handles(methods.FORK)
async def fork(server: AgentServer, params: rpc.ForkParams) -> rpc.ForkResult:
    fork_id = await server.sessions().fork(params.session_id, params.seq, title=params.title)
    return rpc.ForkResult(fork_id)


@handles(methods.CLOSE)
async def close(server: AgentServer, params: rpc.SessionParams) -> None:
    await server.sessions().close(params.session_id)


@handles(methods.CANCEL)
async def cancel(server: AgentServer, params: rpc.SessionParams) -> None:
    await server.sessions().cancel(params.session_id)
