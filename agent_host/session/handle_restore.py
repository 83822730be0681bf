"""The operations of a session handle that return it to an earlier moment: restore
to a prompt (or only some files), its preview, reverting one turn's files, undoing
the last restore, the diffs to choose by -- and finishing what a crash left of them.

Each runs holding the session (:meth:`~.handle.SessionHandle.exclusive`) on the
session as :func:`finish_pending` leaves it; the files are written through the
session's workspace, and editor buffers that could not be reverted are named in the
result.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from . import capture_log
from .changes import FileDiff, messages_in, session_changes
from .checkpoints import cut_short_writes
from .errors import InvalidArgument, ToolError
from .op_queue import Wait
from .state import SessionState
from .workspace import Workspace, unsynced_buffers

if TYPE_CHECKING:
    from .host import AgentHost
    from .restore import RestoreResult, UndoResult
    from .restore_plan import RestorePreview

log = logging.getLogger(__name__)


class RestoreOperations:
    """Restore, its preview, revert, undo and the diffs, of a SessionHandle."""

    if TYPE_CHECKING:  # what SessionHandle provides
        host: AgentHost
        session_id: str

        @property
        def workspace(self) -> Workspace: ...

        def exclusive(
            self, wait: Wait = False, what: str = "it"
        ) -> AbstractAsyncContextManager[None]: ...

        async def state(self, *, full: bool = True) -> SessionState: ...

        async def settled(self, *, full: bool = True) -> SessionState: ...

        def refresh_cost(self, state: SessionState) -> None: ...

    async def restore(
        self,
        seq: int,
        files: bool = True,
        conversation: bool = True,
        *,
        force: bool = False,
        paths: Collection[str] | None = None,
        wait: Wait = False,
    ) -> RestoreResult:
        """Return to the moment just before the prompt at ``seq`` (undoable); files
        changed since the session last wrote them are conflicts unless ``force``;
        with ``paths``, only those files are put back."""
        async with self.exclusive(wait, "a restore"):
            if not (files or conversation):
                raise InvalidArgument("restore needs files, conversation or both")
            state = await self.settled()
            from .restore import restore_to

            with unsynced_buffers(self.workspace) as unsynced:
                result = await restore_to(
                    state, self.workspace, seq, files, conversation, force, paths
                )
            result.unreverted_buffers = unsynced()
        self.refresh_cost(state)
        return result

    async def preview_restore(
        self,
        seq: int,
        files: bool = True,
        conversation: bool = True,
        *,
        paths: Collection[str] | None = None,
        wait: Wait = False,
    ) -> RestorePreview:
        """What :meth:`restore` would do, per file, nothing written."""
        async with self.exclusive(wait, "a restore preview"):
            if not (files or conversation):
                raise InvalidArgument("restore needs files, conversation or both")
            state = await self.settled()
            from .restore import preview_restore

            return await preview_restore(state, self.workspace, seq, files, conversation, paths)

    async def revert_files(
        self,
        seq: int,
        paths: Collection[str],
        *,
        force: bool = False,
        dry_run: bool = False,
        wait: Wait = False,
    ) -> RestoreResult | RestorePreview:
        """Undo the turn at ``seq``'s changes to ``paths`` (the conversation stays;
        undoable as a restore); with ``dry_run``, what it would do."""
        async with self.exclusive(wait, "reverting files"):
            state = await self.settled()
            from .restore import RestoreResult, revert_files

            with unsynced_buffers(self.workspace) as unsynced:
                result = await revert_files(state, self.workspace, seq, paths, force, dry_run)
            if isinstance(result, RestoreResult):
                result.unreverted_buffers = unsynced()
        return result

    async def changes(
        self, seq: int | None = None, from_seq: int | None = None, to_seq: int | None = None
    ) -> list[FileDiff]:
        """Per-file diffs of the turn at ``seq`` (neither: the last turn), or of the
        checkpoint range ``from_seq`` to ``to_seq`` (None: now)."""
        state = await self.state()
        await state.load()
        return await session_changes(
            state.timeline, self.host.store.blobs, self.session_id, seq, from_seq, to_seq
        )

    async def undo_restore(
        self, *, force: bool = False, partial: bool = True, wait: Wait = False
    ) -> UndoResult:
        """Undo the last restore: files and conversation as they were before it;
        files changed since the restore wrote them are kept unless ``force`` (and
        without ``partial`` they make it UndoWouldKeep, nothing done)."""
        async with self.exclusive(wait, "an undo"):
            from .restore import undo_last_restore

            state = await self.settled()
            shown = messages_in(state.timeline)
            with unsynced_buffers(self.workspace) as unsynced:
                result = await undo_last_restore(state, self.workspace, force, partial)
            result.unreverted_buffers = unsynced()
            result.messages_restored = max(0, messages_in(state.timeline) - shown)
        self.refresh_cost(state)
        return result


async def finish_pending(state: SessionState, workspace: Workspace | None) -> None:
    """What a crash left unfinished; with no ``workspace`` (the session's folder is
    not open here), only what needs no files."""
    # restore.py is loaded on first use, out of the server's start-up (P5).
    from .restore import finish_pending as finish_restore

    await capture_log.finish_pending(state)
    if workspace is None:
        return
    for path in cut_short_writes(state.latest):
        try:
            await workspace.discard_partial_writes(path)
        except ToolError as exc:  # a folder on the way swapped meanwhile
            log.warning("the temp file of %s is left for the next sweep: %s", path, exc)
    await finish_restore(state, workspace)
