"""What a restore would do, decided before anything is recorded: per file the jump
(its content now, its target) and whether it is a conflict -- and that decision as a
preview, per file the diff it would apply.

A restore (:func:`~.restore.restore_to`), a revert of one turn's files
(:func:`~.restore.revert_files`) and their dry runs all decide here, with the same
code, so that a preview followed by the restore writes exactly what the preview
said: the files not in conflict (all of them, forced) to the preview's ``after``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import attrs

from . import events as ev
from .blobs import BlobStore
from .changes import FileDiff, as_text, file_diff, messages_in, moves, source_of, unified_diff
from .checkpoints import (
    Checkpoint,
    buffers_to_restore,
    checkpoints,
    executables_left,
    executables_to_restore,
    files_to_restore,
    left_by_session,
)
from .errors import InvalidArgument
from .restore_files import as_left, files_now
from .state import SessionState
from .workspace import Workspace


@attrs.define
class PlannedFile:
    """One file a restore would change."""

    jump: ev.FileSnapshot
    """Its content now (``before``, ``buffer_before``) and the restore's target."""
    conflict: bool
    """Not as the session last left it: someone else changed it since."""
    left: str | None
    """The blob the session last left there (None: absent, or never left)."""


async def plan_files(
    state: SessionState,
    workspace: Workspace,
    events: Sequence[ev.Event],
    seq: int,
    paths: Collection[str] | None = None,
) -> list[PlannedFile]:
    """The files a restore to just before ``seq`` would change, as ``events`` (the
    timeline, or one turn of it) changed them; only ``paths`` when given.

    Reads every file as it is now and stores its content, so that the restore can
    keep it for its undo (and a conflict's check can compare it)."""
    targets = files_to_restore(events, seq)
    if paths is not None:
        unknown = sorted(set(paths) - set(targets))
        if unknown:
            raise InvalidArgument(
                f"paths: {', '.join(unknown)} not changed by the session since checkpoint "
                f"{seq}; the files it changed are: {', '.join(targets) or 'none'}"
            )
        targets = {path: target for path, target in targets.items() if path in paths}
    buffers = buffers_to_restore(events, seq)
    bits = executables_to_restore(events, seq)
    timeline = state.timeline
    left = left_by_session(timeline)
    bits_now = executables_left(timeline)
    blobs = state.store.blobs
    found = await files_now(workspace, blobs, list(targets))
    planned: list[PlannedFile] = []
    for (path, target), (current_id, unsaved_id, open_buffer) in zip(
        targets.items(), found, strict=True
    ):
        mode_differs = bits[path] is not None and bits[path] != bits_now.get(path)
        if not (
            current_id != target or (open_buffer and unsaved_id != buffers[path]) or mode_differs
        ):
            continue  # already as the restore would leave it
        jump = ev.FileSnapshot(
            path=path,
            before=current_id,
            after=target,
            buffer_before=unsaved_id,
            jump=True,
            buffer_after=buffers[path],
            executable_before=bits_now.get(path),
            executable_after=bits[path],
        )
        ours = left.get(path)
        conflict = not await as_left(blobs, ours, current_id, unsaved_id)
        planned.append(PlannedFile(jump, conflict, None if ours is None else ours[0]))
    return planned


def conflicts_of(planned: Sequence[PlannedFile], force: bool) -> list[str]:
    """The files a restore keeps as they are: the conflicts, unless forced."""
    return [] if force else [p.jump.path for p in planned if p.conflict]


@attrs.define
class PreviewFile(FileDiff):
    """A file a restore would change: ``before`` is what it holds now (an open
    buffer's unsaved text, where there is one), ``after`` what the restore writes."""

    conflict: bool = False
    """The user (or another program) changed it since the agent last did: a
    restore keeps it unless forced."""
    user_diff: str | None = None
    """For a conflict: the agent's last text to what the file holds now, the change
    a forced restore would discard (None: binary, or the agent never left it)."""
    agent_text: str | None = None
    """The agent's last text of the file (None: absent, binary, or never left)."""


@attrs.define
class RestorePreview:
    """What a restore would do, nothing written."""

    files: list[PreviewFile]
    messages_removed: int
    """The prompts and answers the conversation would lose."""
    checkpoint: Checkpoint
    not_captured: list[str] = attrs.field(factory=list)
    """Paths later commands changed without capture: the restore cannot put them back."""
    unconfined: list[str] = attrs.field(factory=list)
    """What later turns ran outside the sandbox: what it changed outside the
    workspace the restore cannot undo."""


async def preview(
    state: SessionState,
    planned: Sequence[PlannedFile],
    changed_by: Sequence[ev.Event],
    checkpoint: Checkpoint,
    messages_removed: int,
    not_captured: list[str],
    unconfined: list[str] | None = None,
) -> RestorePreview:
    """The plan as a person reads it: per file the diff from now to what the
    restore writes, and for a conflict what the user changed."""
    blobs = state.store.blobs
    sources = {m.path: m.sources for m in moves(changed_by)}
    files: list[PreviewFile] = []
    for p in planned:
        jump = p.jump
        now = jump.buffer_before or jump.before
        shown = await file_diff(
            blobs, jump.path, now, jump.after, source_of(sources.get(jump.path, set()))
        )
        agent_text = await _text(blobs, p.left)
        user_diff = None
        if p.conflict and not shown.binary and (p.left is None or agent_text is not None):
            user_diff, _, _ = unified_diff(
                agent_text, await _text(blobs, now), jump.path, jump.path
            )
        files.append(
            PreviewFile(
                **attrs.asdict(shown, recurse=False),
                conflict=p.conflict,
                user_diff=user_diff,
                agent_text=agent_text,
            )
        )
    return RestorePreview(files, messages_removed, checkpoint, not_captured, unconfined or [])


def checkpoint_at(events: Sequence[ev.Event], seq: int) -> Checkpoint:
    return next(cp for cp in checkpoints(events) if cp.seq == seq)


def messages_after(events: Sequence[ev.Event], seq: int) -> int:
    """The messages a restore to just before ``seq`` takes out of the conversation."""
    return messages_in(e for e in events if e.seq >= seq)


async def _text(blobs: BlobStore, blob: str | None) -> str | None:
    if blob is None:
        return None
    return as_text(await blobs.get(blob))
