"""Restore and undo-restore: taking a session's files and conversation back to a
checkpoint, and bringing them forward again.

Each is one decision in the log. Before the workspace is touched, one append
records the whole intent: a Restore (or RestoreUndone) event that says what the
conversation is cut to (see :mod:`.timeline`: nothing is removed from the log),
followed by a jump FileSnapshot per file with its target content. Then the files
are written, and a RestoreApplied event marks them done. A crash before the
append leaves the session as it was; a crash after it leaves an intent that
:func:`finish_pending` completes, in whichever process touches the session next.

Every snapshot an intent needs is checked present and whole before it is
recorded, and a file that something else changed since the intent read it is
kept as it is, never overwritten -- but a file an editor normalised as it wrote
it (a final newline, line ends: :func:`~.workspace.as_normalised`) is as the
session left it. A file the editor refused to write (ACP's ``fs/write_text_file``
answered with an error, or not at all) is kept too, and reported with the
editor's reason (``not_restored``). The caller (AgentHost) holds the store's turn
lease and has checked that no turn is running.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence, Set

import attrs

from . import events as ev
from .blobs import BlobStore, blob_id
from .changes import turn_events
from .checkpoints import (
    check_checkpoint,
    last_restore,
    not_captured_since,
    pending_intent,
    unconfined_since,
)
from .errors import (
    BlobCorrupt,
    BlobNotFound,
    FileChanged,
    InvalidArgument,
    PathChanged,
    PathOutsideWorkspace,
    ToolError,
    UndoUnavailable,
    UndoWouldKeep,
    WorkspaceMismatch,
    WriteRefused,
)
from .restore_files import check_snapshots, each, jumps_back, landed_as
from .restore_plan import (
    PlannedFile,
    RestorePreview,
    checkpoint_at,
    conflicts_of,
    messages_after,
    plan_files,
    preview,
)
from .session_folder import session_files
from .state import SessionState
from .workspace import (
    BUFFER_ENCODING,
    BUFFER_ERRORS,
    IfContent,
    Workspace,
)

log = logging.getLogger(__name__)


@attrs.define
class RestoreResult:
    restored_files: list[str]
    removed_events: int
    conflicts: list[str] = attrs.field(factory=list)
    """Files left as they are: changed since the session last wrote them (by the
    user, a formatter, another tool), before or while the restore ran."""
    not_captured: list[str] = attrs.field(factory=list)
    """Paths the later turns' commands changed without capture: not put back."""
    unconfined: list[str] = attrs.field(factory=list)
    """What the later turns ran outside the sandbox (commands, MCP tools): what
    they changed outside the workspace stays (see :attr:`Checkpoint.unconfined`)."""
    unreverted_buffers: list[str] = attrs.field(factory=list)
    """Open editor buffers that could not be brought to their restored content."""
    not_restored: dict[str, str] = attrs.field(factory=dict)
    """Files the editor did not write (it refused, failed or did not answer), each
    with its reason: left as they are."""
    messages_removed: int = 0
    """Of ``removed_events``, the prompts and answers: what a person counts."""


@attrs.define
class UndoResult:
    restored_files: list[str]
    restored_events: int
    conflicts: list[str] = attrs.field(factory=list)
    unreverted_buffers: list[str] = attrs.field(factory=list)
    """Open editor buffers that could not be brought to their content."""
    not_restored: dict[str, str] = attrs.field(factory=dict)
    """Files the editor did not write, each with its reason (as for a restore)."""
    messages_restored: int = 0
    """Of ``restored_events``, the prompts and answers: what a person counts."""


async def restore_to(
    state: SessionState,
    workspace: Workspace,
    seq: int,
    files: bool,
    conversation: bool,
    force: bool = False,
    paths: Collection[str] | None = None,
) -> RestoreResult:
    """Return to the moment just before the prompt at ``seq`` (undoable); with
    ``paths``, only those files (the conversation as without).

    A file that is not as the session last left it -- the user, a formatter or
    another tool changed it since, or an open buffer holds unsaved text the agent
    did not put there -- is a conflict: left as it is and reported, unless
    ``force``, which overwrites it (its content is kept for the undo, as always).
    """
    events = state.timeline
    check_checkpoint(events, state.id, seq)
    planned: list[PlannedFile] = []
    if files:
        workspace = await _session_files(state, workspace)
        planned = await plan_files(state, workspace, events, seq, paths)
    hidden = sum(1 for e in events if e.seq >= seq) if conversation else 0
    record = ev.Restore(to_seq=seq - 1, files=files, conversation=conversation)
    result = await _carry_out(state, workspace, record, planned, force)
    result.removed_events = hidden
    result.messages_removed = messages_after(events, seq) if conversation else 0
    result.not_captured = not_captured_since(events, seq) if files else []
    result.unconfined = unconfined_since(events, seq) if files else []
    return result


async def preview_restore(
    state: SessionState,
    workspace: Workspace,
    seq: int,
    files: bool = True,
    conversation: bool = True,
    paths: Collection[str] | None = None,
) -> RestorePreview:
    """What :func:`restore_to` would do, nothing written (file contents read now are
    stored, as the restore would store them)."""
    events = state.timeline
    check_checkpoint(events, state.id, seq)
    planned: list[PlannedFile] = []
    if files:
        workspace = await _session_files(state, workspace)
        planned = await plan_files(state, workspace, events, seq, paths)
    later = [e for e in events if e.seq >= seq]
    return await preview(
        state,
        planned,
        later,
        checkpoint_at(events, seq),
        messages_after(events, seq) if conversation else 0,
        not_captured_since(events, seq) if files else [],
        unconfined_since(events, seq) if files else [],
    )


async def revert_files(
    state: SessionState,
    workspace: Workspace,
    seq: int,
    paths: Collection[str],
    force: bool = False,
    dry_run: bool = False,
) -> RestoreResult | RestorePreview:
    """Undo the changes the turn at ``seq`` made to ``paths``: each file back to its
    content just before that turn; the conversation stays. Recorded as a files-only
    restore, so undoable as one; a file changed since (by the user, or by later
    turns) is a conflict, kept unless ``force``."""
    events = state.timeline
    check_checkpoint(events, state.id, seq)
    if not paths:
        raise InvalidArgument("paths: name at least one file the turn changed")
    workspace = await _session_files(state, workspace)
    turn = turn_events(events, seq, state.id)
    planned = await plan_files(state, workspace, turn, seq, paths)
    if dry_run:
        return await preview(state, planned, turn, checkpoint_at(events, seq), 0, [])
    record = ev.Restore(to_seq=seq - 1, files=True, conversation=False)
    return await _carry_out(state, workspace, record, planned, force)


async def _carry_out(
    state: SessionState,
    workspace: Workspace,
    record: ev.Restore,
    planned: Sequence[PlannedFile],
    force: bool,
) -> RestoreResult:
    """Record the restore and its jumps in one append, then write the files."""
    changes = [p.jump for p in planned]
    conflicts = conflicts_of(planned, force)
    writable = [c for c in changes if c.path not in conflicts]
    ready = await check_snapshots(state.store.blobs, writable, "restore")
    head = await state.append([attrs.evolve(record, conflicts=conflicts or None), *changes])
    refused: dict[str, str] = {}
    kept = await _apply(
        state, workspace, head - len(changes), changes, ready, set(conflicts), refused
    )
    later = [path for path in kept if path not in conflicts and path not in refused]
    return RestoreResult(_written(changes, kept), 0, conflicts + later, not_restored=refused)


async def undo_last_restore(
    state: SessionState, workspace: Workspace, force: bool = False, partial: bool = True
) -> UndoResult:
    """Undo the last restore: files and conversation as they were before it.

    A file changed since the restore wrote it (by the user, a command, another
    tool) is kept as it is: the undo takes back the restore, not later work --
    unless ``force``, which takes it back too (what it held is kept for a restore).
    Without ``partial``, such a file makes it UndoWouldKeep before anything is done,
    so that the user can still choose to force it (a partial undo cannot be undone
    further).
    """
    restore, made = last_restore(state.timeline)
    if restore.conflicts:  # never written by the restore: nothing to take back
        made = [change for change in made if change.path not in restore.conflicts]
    if restore.truncation is not None:
        return await _undo_cut_restore(state, workspace, restore, made, force, partial)
    if made:
        workspace = await _session_files(state, workspace)
    skip = _kept_by(state, restore)
    changes, kept = await jumps_back(workspace, state.store.blobs, made, skip, force)
    _whole_or_none(kept, skip, partial)
    ready = await check_snapshots(state.store.blobs, changes, "undo the restore of")
    stayed = _index_from_end(state.timeline, restore)  # visible before and after it
    head = await state.append([ev.RestoreUndone(restore_seq=restore.seq), *changes])
    back = len(state.timeline) - 1 - len(changes) - stayed
    refused: dict[str, str] = {}
    kept += await _apply(state, workspace, head - len(changes), changes, ready, refused=refused)
    conflicts = [path for path in kept if path not in refused]
    return UndoResult(_written(changes, kept), back, conflicts, not_restored=refused)


async def finish_pending(state: SessionState, workspace: Workspace) -> list[str] | None:
    """Finish a restore or undo a crash interrupted: write the files it had not
    written yet. The files kept as something else left them, or None when there
    was nothing to finish (or it belongs to another folder's workspace)."""
    if not state.loaded:
        # Resumed from its snapshot, which is never of a log with a restore to
        # finish, and no restore was logged since (it would have loaded the log).
        return None
    pending = pending_intent(state.events)
    if pending is None:
        return None
    intent, jumps = pending
    try:
        workspace = await _session_files(state, workspace)
    except WorkspaceMismatch as mismatch:
        log.warning("session %s: its unfinished restore is left: %s", state.id, mismatch)
        return None
    for jump in jumps:
        await workspace.discard_partial_writes(jump.path)
    log.info("session %s: finishing the restore recorded at seq %d", state.id, intent.seq)
    conflicts = set(intent.conflicts or ()) if type(intent) is ev.Restore else set()
    return await _apply(state, workspace, intent.seq, jumps, {}, conflicts)


async def _apply(
    state: SessionState,
    workspace: Workspace,
    intent_seq: int,
    jumps: Sequence[ev.FileSnapshot],
    ready: Mapping[str, bytes],
    conflicts: Set[str] = frozenset(),
    refused: dict[str, str] | None = None,
) -> list[str]:
    """Write each jump's target, then mark the intent done; the paths kept.

    A file is written only while it is as the intent found it (``before``); one
    already at its target (or at it as an editor normalised it,
    :func:`~.workspace.as_normalised`) is done (a crash came after its write);
    anything else was changed by someone else meanwhile and is kept, as are the
    ``conflicts`` the intent found, and the files the editor refused to write
    (in ``refused``, with its reason). That makes this safe to run again after a
    crash at any point.
    """
    if not jumps:
        return []
    blobs = state.store.blobs

    async def apply(jump: ev.FileSnapshot) -> bool:
        """Whether the file is at its target now (False: kept as it is)."""
        if jump.path in conflicts:
            return False
        try:
            buffer = await workspace.buffer_text(jump.path)
            try:
                await _write(workspace, blobs, jump, ready, IfContent(jump.before))
                return True
            except FileChanged as changed:
                if changed.found != jump.after and not await landed_as(
                    workspace, blobs, jump.path, jump.after
                ):
                    log.warning("restore keeps %s: changed by something else", jump.path)
                    return False
            # Written before a crash; an open buffer may still need its text (a
            # deleted file's buffer is left alone, unless the jump gives it text).
            wanted = jump.buffer_after or jump.after
            if buffer is not None and wanted is not None and _buffer_id(buffer) != wanted:
                await _write(workspace, blobs, jump, ready, IfContent(jump.after))
            return True
        except PathChanged:
            raise  # a moment's race: the intent stays, and is finished on the next try
        except WriteRefused as exc:
            log.warning("restore keeps %s: %s", jump.path, exc)
            if refused is not None:
                refused[jump.path] = exc.reason
            return False
        except (ToolError, PathOutsideWorkspace, FileChanged) as exc:
            log.warning("restore keeps %s: %s", jump.path, exc)  # a folder now, a link out
            return False
        except (BlobNotFound, BlobCorrupt) as exc:  # damaged since it was checked
            log.warning("restore keeps %s: %s", jump.path, exc)
            return False

    async with workspace.batch_writes():  # durable before RestoreApplied says so
        done = await each(jumps, apply)
    kept = [jump.path for jump, ok in zip(jumps, done, strict=True) if not ok]
    await state.append([ev.RestoreApplied(intent_seq=intent_seq, kept=kept)])
    return kept


async def _write(
    workspace: Workspace,
    blobs: BlobStore,
    jump: ev.FileSnapshot,
    ready: Mapping[str, bytes],
    expect: IfContent,
) -> None:
    """The jump's target on disk, if the disk is as ``expect`` says, and in an open
    buffer the unsaved text it had."""

    async def content(blob: str) -> bytes:
        data = ready.get(blob)
        return await blobs.get(blob) if data is None else data

    text = None
    if jump.buffer_after is not None:
        text = (await content(jump.buffer_after)).decode(BUFFER_ENCODING, BUFFER_ERRORS)
    if jump.after is None:
        await workspace.delete(jump.path, buffer=text, expect=expect)
    else:
        data = await content(jump.after)
        await workspace.write_bytes(
            jump.path, data, buffer=text, expect=expect, executable=jump.executable_after
        )


def _buffer_id(text: str) -> str:
    return blob_id(text.encode(BUFFER_ENCODING, BUFFER_ERRORS))


def _whole_or_none(kept: list[str], skip: set[str], partial: bool) -> None:
    changed = [path for path in kept if path not in skip]
    if changed and not partial:
        raise UndoWouldKeep(changed)


def _kept_by(state: SessionState, restore: ev.Event) -> set[str]:
    """The files a restore left as they were (its RestoreApplied says)."""
    for event in reversed(state.events):
        if type(event) is ev.RestoreApplied and event.intent_seq == restore.seq:
            return set(event.kept)
        if event.seq <= restore.seq:
            break
    return set()


def _index_from_end(events: list[ev.Event], event: ev.Event) -> int:
    for i in range(len(events) - 1, -1, -1):
        if events[i] is event:
            return i
    raise ValueError("event not in the timeline")


async def _undo_cut_restore(
    state: SessionState,
    workspace: Workspace,
    restore: ev.Restore,
    made: list[ev.FileSnapshot],
    force: bool = False,
    partial: bool = True,
) -> UndoResult:
    """Undo a restore made by agent-host 0.1, which cut the log and kept the cut
    events in the store's truncations: they are appended back."""
    cuts = await state.store.truncations(state.id)
    cut = next((t for t in cuts if t.id == restore.truncation), None)
    if cut is None:
        raise UndoUnavailable(
            f"cannot undo the restore at seq {restore.seq} of session {state.id!r}: the "
            f"conversation it removed (truncation {restore.truncation}) is no longer in the "
            "store. Restore to a checkpoint instead"
        )
    if made:
        workspace = await _session_files(state, workspace)
    changes, kept = await jumps_back(workspace, state.store.blobs, made, set(), force)
    _whole_or_none(kept, set(), partial)
    ready = await check_snapshots(state.store.blobs, changes, "undo the restore of")
    back = [attrs.evolve(e, seq=0, ts=0.0) for e in cut.events]
    await state.truncate(restore.seq - 1)
    # The conversation comes back as it was: history, not news for listeners.
    head = await state.append(
        [*back, ev.RestoreUndone(restore_seq=restore.seq), *changes], untold=len(back)
    )
    refused: dict[str, str] = {}
    kept += await _apply(state, workspace, head - len(changes), changes, ready, refused=refused)
    conflicts = [path for path in kept if path not in refused]
    return UndoResult(_written(changes, kept), len(back), conflicts, not_restored=refused)


def _written(changes: Sequence[ev.FileSnapshot], kept: list[str]) -> list[str]:
    return [c.path for c in changes if c.path not in kept]


async def _session_files(state: SessionState, workspace: Workspace) -> Workspace:
    """The workspace as the session's files are named (see :mod:`.session_folder`);
    a log that does not say its folder restores no files: its relative paths would
    land in whichever folder happens to come first."""
    return await session_files(
        state,
        workspace,
        to="restore its files, or restore the conversation alone (files: false)",
        unrecorded="Restore the conversation alone (files: false)",
    )
