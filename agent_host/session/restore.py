"""Restore and undo-restore: taking a session's files and conversation back to a
checkpoint, and bringing them forward again.

Both record what they did in the log (a Restore or RestoreUndone event and a jump
FileSnapshot per file written) before writing the workspace. The caller (AgentHost)
holds the store's turn lease and has checked that no turn is running.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from . import events as ev
from .blobs import BlobStore
from .checkpoints import buffers_to_restore, check_checkpoint, files_to_restore, last_restore
from .errors import WorkspaceMismatch
from .state import SessionState
from .workspace import BUFFER_ENCODING, BUFFER_ERRORS, Workspace, unsaved_bytes


@attrs.define
class RestoreResult:
    restored_files: list[str]
    removed_events: int


@attrs.define
class UndoResult:
    restored_files: list[str]
    restored_events: int


async def restore_to(
    state: SessionState, workspace: Workspace, seq: int, files: bool, conversation: bool
) -> RestoreResult:
    """Return to the moment just before the prompt at ``seq`` (undoable)."""
    blobs = state.store.blobs
    check_checkpoint(state.events, state.id, seq)
    if files:
        _check_files_belong_here(state, workspace)
    changes = []
    buffers = buffers_to_restore(state.events, seq) if files else {}
    for path, target in files_to_restore(state.events, seq).items() if files else ():
        current_id, unsaved_id, open_buffer = await _file_now(workspace, blobs, path)
        if current_id != target or (open_buffer and unsaved_id != buffers[path]):
            changes.append(
                ev.FileSnapshot(
                    path=path,
                    before=current_id,
                    after=target,
                    buffer_before=unsaved_id,
                    jump=True,
                )
            )
    # Conversation only: the removed turns' edits stay on disk, so their snapshots
    # stay in the log, or a later restore to an earlier point would miss them.
    carried = [
        attrs.evolve(e, seq=0, ts=0.0)
        for e in state.events[seq - 1 :]
        if type(e) is ev.FileSnapshot and not files
    ]
    removed = state.head - (seq - 1) if conversation else 0
    truncation = await state.truncate(seq - 1) if conversation else None
    record = ev.Restore(
        to_seq=seq - 1, files=files, conversation=conversation, truncation=truncation
    )
    await state.append([record, *changes, *(carried if conversation else [])])
    await _write_changes(workspace, blobs, changes, buffers)
    return RestoreResult([c.path for c in changes], removed)


async def undo_last_restore(state: SessionState, workspace: Workspace) -> UndoResult:
    """Undo the last restore: files and conversation as they were before it."""
    blobs = state.store.blobs
    restore, made = last_restore(state.events)
    if made:
        _check_files_belong_here(state, workspace)
    back: list[ev.Event] = []
    if restore.conversation and restore.truncation is not None:
        cuts = await state.store.truncations(state.id)
        cut = next(t for t in cuts if t.id == restore.truncation)
        back = [attrs.evolve(e, seq=0, ts=0.0) for e in cut.events]
    changes = []
    for change in made:
        current_id, unsaved_id, _ = await _file_now(workspace, blobs, change.path)
        changes.append(
            ev.FileSnapshot(
                path=change.path,
                before=current_id,
                after=change.before,
                buffer_before=unsaved_id,
                jump=True,
            )
        )
    await state.truncate(restore.seq - 1)
    # The conversation comes back as it was: history, not news for listeners.
    await state.append(
        [*back, ev.RestoreUndone(restore_seq=restore.seq), *changes], untold=len(back)
    )
    await _write_changes(workspace, blobs, changes, {c.path: c.buffer_before for c in made})
    return UndoResult([c.path for c in changes], len(back))


def _check_files_belong_here(state: SessionState, workspace: Workspace) -> None:
    """Refuse to write a session's files into another project's folder.

    Snapshots name files relative to the folder the session was started in; a
    session resumed from another project (session/list of every workspace) would
    otherwise restore them over that project's files of the same names.
    """
    started = next((e for e in state.events if type(e) is ev.SessionStarted), None)
    folder = started.workspace if started else None
    if folder and os.path.realpath(folder) not in {str(r) for r in workspace.roots}:
        raise WorkspaceMismatch(
            f"session {state.id!r} was started in {folder}, and its files belong there; "
            f"this workspace is {workspace.roots[0]}. Open that folder to restore its "
            "files, or restore the conversation alone (files: false)"
        )


async def _file_now(
    workspace: Workspace, blobs: BlobStore, path: str
) -> tuple[str | None, str | None, bool]:
    """``path`` as it is: its blob on disk, an open buffer's unsaved text (a blob,
    None if it matches the disk), and whether a buffer is open at all."""
    current = await workspace.read_disk(path)
    current_id = None if current is None else await blobs.put(current)
    buffer = await workspace.buffer_text(path)
    unsaved = unsaved_bytes(buffer, current)
    unsaved_id = None if unsaved is None else await blobs.put(unsaved)
    return current_id, unsaved_id, buffer is not None


async def _write_changes(
    workspace: Workspace,
    blobs: BlobStore,
    changes: list[ev.FileSnapshot],
    buffers: Mapping[str, str | None],
) -> None:
    """Write each file; an open buffer that had unsaved text (``buffers``, blob ids)
    gets that back, any other follows the file."""
    for change in changes:
        text_id = buffers.get(change.path)
        text = None
        if text_id is not None:
            data = await blobs.get(text_id)
            text = data.decode(BUFFER_ENCODING, BUFFER_ERRORS)
        if change.after is None:
            await workspace.delete(change.path, buffer=text)
        else:
            await workspace.write_bytes(change.path, await blobs.get(change.after), buffer=text)
