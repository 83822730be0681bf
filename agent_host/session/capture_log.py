"""Logging what a command changed, write-ahead, so that no crash leaves a turn whose
restore is silently partial.

Before a command (or an MCP tool) runs, the workspace index is brought up to date
and stored (:meth:`WorkspaceIndex.save`: whole, or what changed since a whole copy it
names), and a CaptureStarted naming it is
appended. After it, what changed and a CaptureEnded are logged together, in the
same append as the tool's result (one durable write a command, not two). A
crash anywhere in between leaves the CaptureStarted pending: the next operation
on the session, in any process and under the session's turn lease, rebuilds the
index from its stored copy, compares it with the disk and logs what changed,
closing the capture -- so the before of every file the command changed is in the
log when a restore looks. If the stored copy cannot be read, the roots are
logged as not captured: a restore then says it cannot put them back rather than
claim to be exact.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import events as ev
from .checkpoints import pending_capture
from .errors import BlobCorrupt, BlobNotFound

if TYPE_CHECKING:
    from .blobs import BlobStore
    from .capture import WorkspaceIndex
    from .capture_diff import CapturedChanges
    from .state import SessionState

log = logging.getLogger(__name__)


async def begin(state: SessionState, index: WorkspaceIndex) -> int:
    """Bring the index up to date and log it, before the work runs: the seq of the
    CaptureStarted (the "before" of whatever the work changes is in it)."""
    await index.refresh()
    saved = await index.save()
    return await state.append([ev.CaptureStarted(index=saved)])


async def end(index: WorkspaceIndex, started: int) -> list[ev.Event]:
    """What the work changed, and that the capture begun at ``started`` is done: the
    records to log, by the caller, in the append that follows the work (its result).

    The contents they name are stored by now; until they are logged the capture is
    pending, and a crash leaves it for :func:`finish_pending`."""
    found = await index.changes()
    return [*change_records(found), ev.CaptureEnded(started_seq=started)]


def change_records(found: CapturedChanges) -> list[ev.Event]:
    records: list[ev.Event] = [
        ev.FileSnapshot(
            path=change.path,
            before=change.before,
            after=change.after,
            by_command=True,
            executable_before=change.executable_before,
            executable_after=change.executable_after,
        )
        for change in found.changes
    ]
    if found.not_captured:
        records.append(ev.UncapturedChanges(paths=found.not_captured))
    return records


async def finish_pending(state: SessionState) -> bool:
    """Log what a crash kept a capture from logging; whether there was one.

    The caller holds the session's turn lease: a capture is pending in the log
    while its command runs, and only a crash (which released the lease) makes
    one ours to finish."""
    from .capture import WorkspaceIndex  # walks folders: loaded when needed

    started = pending_capture(state.latest)
    if started is None:
        return False
    blobs = state.store.blobs
    try:
        index = await WorkspaceIndex.load_saved(started.index, blobs)
    except (BlobNotFound, BlobCorrupt, ValueError) as exc:
        # Which files the work changed is unknown: the whole workspace ("./", as
        # folders are shown) is what a restore cannot vouch for.
        log.warning(
            "session %s: the capture begun at seq %d cannot be finished (%s); the "
            "workspace is logged as not captured",
            state.id,
            started.seq,
            exc,
        )
        records: list[ev.Event] = [ev.UncapturedChanges(paths=["./"])]
    else:
        log.info("session %s: finishing the capture begun at seq %d", state.id, started.seq)
        try:
            records = change_records(await index.changes())
        finally:
            await index.close()
    await state.append([*records, ev.CaptureEnded(started_seq=started.seq)])
    return True


async def pinned_blobs(events: Sequence[ev.Event], blobs: BlobStore) -> set[str]:
    """What a pending capture in ``events`` (a session's log) needs kept by gc: its
    stored index, and the contents that index names -- the "before" of whatever the
    command changed, which no event names until the capture is finished."""
    from .capture import WorkspaceIndex
    from .capture_saved import SavedDelta, decode

    started = pending_capture(events)
    if started is None:
        return set()
    kept = {started.index}
    try:
        copy = await asyncio.to_thread(decode, await blobs.get(started.index))
        if isinstance(copy, SavedDelta):
            kept.add(copy.base)  # the whole copy it is read with
        index = await WorkspaceIndex.load_saved(started.index, blobs)
    except (BlobNotFound, BlobCorrupt, ValueError):
        return kept  # the finisher will say what it cannot capture
    return kept | index.blob_ids()
