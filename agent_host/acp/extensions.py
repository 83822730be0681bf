"""The ``_agent-host/*`` extension methods, for clients that build their own UI
around rewinding: one row each in :data:`EXTENSIONS` -- the wire name, the params
model, the handler -- from which initialize's advertised list, the validation and
the dispatch come.

Params and results are the LSP dialect's ``session/<op>`` JSON (camelCase), field
for field; tests/service/test_parity.py holds the two to it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import attrs
from acp import RequestError
from pydantic import BaseModel, ConfigDict, Field

from ..service import SessionService
from ..session.restore_plan import RestorePreview
from . import convert
from .errors import ext_params, invalid_params

# -- params


class SessionParams(BaseModel):
    model_config = ConfigDict(strict=True, populate_by_name=True)
    session_id: str = Field(alias="sessionId")


class RestoreParams(SessionParams):
    seq: int
    """A checkpoint's seq: the session returns to just before that prompt."""
    files: bool = True
    conversation: bool = True
    force: bool = False
    """Overwrite files changed since the session last wrote them (conflicts)."""
    dry_run: bool = Field(False, alias="dryRun")
    """Write nothing: the result's ``preview`` says what the restore would do."""
    paths: list[str] | None = None
    """Only these files are put back; the conversation rewinds all the same."""


class ChangesParams(SessionParams):
    seq: int | None = None
    """A checkpoint's seq: the changes of the turn its prompt started."""
    from_seq: int | None = Field(None, alias="fromSeq")
    """A checkpoint's seq: the start of a range ..."""
    to_seq: int | None = Field(None, alias="toSeq")
    """... and its end (omitted: now)."""


class RestorePreviewParams(SessionParams):
    seq: int
    paths: list[str] | None = None


class RevertFilesParams(SessionParams):
    seq: int
    """The checkpoint whose turn's changes are undone."""
    paths: list[str]
    force: bool = False
    dry_run: bool = Field(False, alias="dryRun")


class UndoRestoreParams(SessionParams):
    force: bool = False
    """Also take back files changed since the restore wrote them (conflicts)."""


class CompactParams(SessionParams):
    instructions: str | None = None
    """What the summary should keep."""


class ForkParams(SessionParams):
    seq: int | None = None
    """A checkpoint's seq: the fork has the conversation up to just before that
    prompt. Omitted: the whole conversation."""
    title: str | None = None


# -- handlers


async def checkpoints(service: SessionService, p: SessionParams) -> dict[str, Any]:
    found = await service.checkpoints(p.session_id)
    return {"checkpoints": [convert.checkpoint_json(c) for c in found]}


async def restore(service: SessionService, p: RestoreParams) -> dict[str, Any]:
    if not (p.files or p.conversation):
        raise invalid_params("files", "a restore needs files, conversation or both")
    if p.dry_run:
        preview = await service.preview_restore(
            p.session_id, p.seq, files=p.files, conversation=p.conversation, paths=p.paths
        )
        return convert.dry_run_json(preview)
    result = await service.restore(
        p.session_id,
        p.seq,
        files=p.files,
        conversation=p.conversation,
        force=p.force,
        paths=p.paths,
    )
    return convert.restore_json(result)


async def restore_preview(service: SessionService, p: RestorePreviewParams) -> dict[str, Any]:
    return convert.preview_json(await service.preview_restore(p.session_id, p.seq, paths=p.paths))


async def changes(service: SessionService, p: ChangesParams) -> dict[str, Any]:
    found = await service.changes(p.session_id, seq=p.seq, from_seq=p.from_seq, to_seq=p.to_seq)
    return {"files": [convert.file_diff_json(d) for d in found]}


async def revert_files(service: SessionService, p: RevertFilesParams) -> dict[str, Any]:
    done = await service.revert_files(
        p.session_id, p.seq, p.paths, force=p.force, dry_run=p.dry_run
    )
    if isinstance(done, RestorePreview):
        return convert.dry_run_json(done)
    return convert.restore_json(done)


async def undo_restore(service: SessionService, p: UndoRestoreParams) -> dict[str, Any]:
    return convert.undo_json(await service.undo_restore(p.session_id, force=p.force))


async def compact(service: SessionService, p: CompactParams) -> dict[str, Any]:
    done = await service.compact(p.session_id, p.instructions)
    return {"before": done.before, "after": done.after, "compacted": done.compacted}


async def fork(service: SessionService, p: ForkParams) -> dict[str, Any]:
    # session/fork (ACP's own) forks the whole conversation; this one takes a seq.
    return {"sessionId": await service.fork(p.session_id, p.seq, title=p.title)}


async def delete(service: SessionService, p: SessionParams) -> dict[str, Any]:
    # ACP's session/delete too (UNROUTED): the SDK's router does not route it.
    await service.delete(p.session_id)
    return {}


# -- the table

P = TypeVar("P", bound=SessionParams)


@attrs.frozen
class ExtensionMethod(Generic[P]):
    name: str
    """The wire name, with its leading ``_``."""
    params: type[P]
    handler: Callable[[SessionService, P], Awaitable[dict[str, Any]]]


EXTENSIONS: tuple[ExtensionMethod[Any], ...] = (
    ExtensionMethod("_agent-host/checkpoints", SessionParams, checkpoints),
    ExtensionMethod("_agent-host/restore", RestoreParams, restore),
    ExtensionMethod("_agent-host/restorePreview", RestorePreviewParams, restore_preview),
    ExtensionMethod("_agent-host/changes", ChangesParams, changes),
    ExtensionMethod("_agent-host/revertFiles", RevertFilesParams, revert_files),
    ExtensionMethod("_agent-host/undoRestore", UndoRestoreParams, undo_restore),
    ExtensionMethod("_agent-host/compact", CompactParams, compact),
    ExtensionMethod("_agent-host/fork", ForkParams, fork),
    ExtensionMethod("_agent-host/delete", SessionParams, delete),
)

EXTENSION_METHODS = [method.name for method in EXTENSIONS]
"""As initialize advertises them (agentCapabilities._meta["agent-host"].methods)."""

UNROUTED = {"session/delete": "_agent-host/delete"}
"""ACP's methods the SDK's router does not know, each answered as the extension
method named (its result is ACP's response, its params ACP's request): the
transport (wire.py) renames them as they arrive."""

_BY_NAME = {method.name: method for method in EXTENSIONS}


async def dispatch(service: SessionService, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Answer the extension ``method`` (its name as the SDK passes it: without the
    leading ``_``)."""
    found = _BY_NAME.get(f"_{method}")
    if found is None:
        raise RequestError.method_not_found(f"_{method}")
    p = ext_params(found.params, params)
    return await found.handler(service, p)
