"""A restore's reads: the files as they are now, stored for the undo, and
whether each is as the session left it (exactly, or as an editor normalised it,
:func:`~.workspace.as_normalised`); and the check that every snapshot a restore
would write is whole before anything is recorded; and the jumps that undo a
restore (:func:`jumps_back`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

from . import events as ev
from .blobs import BlobStore
from .errors import BlobCorrupt, BlobNotFound, SnapshotUnavailable
from .workspace import Workspace, as_normalised, unsaved_bytes

T = TypeVar("T")
R = TypeVar("R")
PARALLEL = 4
"""Files a restore reads or writes at once."""
BATCH_FILES = 64
"""Files whose current content a restore holds in memory at once to store it."""
KEEP_READ_BYTES = 64 << 20
"""Snapshots checked before a restore are kept up to this much to write from,
instead of being read from the store a second time."""


async def check_snapshots(
    blobs: BlobStore, changes: Sequence[ev.FileSnapshot], what: str
) -> dict[str, bytes]:
    """Refuse the whole operation, before anything is recorded, when a snapshot
    it would write is missing or damaged; the snapshots read, to write them from."""
    needed = {b: c.path for c in changes for b in (c.after, c.buffer_after) if b is not None}
    ready, bad = await blobs.read_checked(needed, KEEP_READ_BYTES)
    if bad:
        shown = "; ".join(f"{needed[b]} (blob {b[:12]}, {why})" for b, why in bad.items())
        raise SnapshotUnavailable(
            f"cannot {what} the session's files: the saved content of {shown} "
            "is not in the store whole. Nothing was changed. Restore the conversation "
            "alone (files: false), or restore the store's blobs from a backup"
        )
    return ready


async def same_content(blobs: BlobStore, ours: str | None, found: str | None) -> bool:
    """Whether the blob ``found`` is the blob ``ours`` as an editor normalised it
    (both in the store: what the session wrote, and what :func:`files_now` read)."""
    if ours == found:
        return True
    if ours is None or found is None:
        return False
    try:
        return as_normalised(await blobs.get(ours), await blobs.get(found))
    except (BlobNotFound, BlobCorrupt):
        return False  # cannot tell: a conflict, the safe side


async def as_left(
    blobs: BlobStore,
    left: tuple[str | None, str | None] | None,
    current: str | None,
    unsaved: str | None,
) -> bool:
    """Whether a file (``current`` on disk, an open buffer's ``unsaved`` text) is
    as the session last ``left`` it: exactly, or as an editor normalised it -- and
    then with no unsaved text, or the text the session left (an ACP editor saves
    what it is given, so unsaved text a restore meant to give back may be gone)."""
    if left is None:
        return False
    if left == (current, unsaved):
        return True
    return unsaved in (None, left[1]) and await same_content(blobs, left[0], current)


async def landed_as(workspace: Workspace, blobs: BlobStore, path: str, ours: str | None) -> bool:
    """Whether the file on disk is the blob ``ours`` as an editor normalised it:
    written before a crash, through an editor that normalised it."""
    if ours is None:
        return False
    try:
        return as_normalised(await blobs.get(ours), await workspace.read_disk(path))
    except (BlobNotFound, BlobCorrupt):
        return False


async def each(items: Iterable[T], work: Callable[[T], Awaitable[R]]) -> list[R]:
    """``work`` on every item, :data:`PARALLEL` at a time; the results in order.

    Files are read and written concurrently so their fsyncs share the disk's
    journal commits (P4, docs/performance.md); order does not matter, as every
    write is checked against the intent. Every call has ended before an error is
    raised, so nothing is still writing when the caller moves on.
    """
    gate = asyncio.Semaphore(PARALLEL)

    async def one(item: T) -> R:
        async with gate:
            return await work(item)

    results = await asyncio.gather(*(one(item) for item in items), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


async def files_now(
    workspace: Workspace, blobs: BlobStore, paths: list[str]
) -> list[tuple[str | None, str | None, bool]]:
    """Each path as it is: its blob on disk, an open buffer's unsaved text (a blob,
    None if it matches the disk), and whether a buffer is open at all. The
    contents are stored, a batch at a time, so that a restore can put them back."""
    out: list[tuple[str | None, str | None, bool]] = []
    for start in range(0, len(paths), BATCH_FILES):

        async def now(path: str) -> tuple[bytes | None, str | None]:
            return await workspace.read_disk(path), await workspace.buffer_text(path)

        batch = await each(paths[start : start + BATCH_FILES], now)
        contents = [(disk, unsaved_bytes(buffer, disk)) for disk, buffer in batch]
        ids = iter(await blobs.put_many([d for pair in contents for d in pair if d is not None]))
        for (disk, unsaved), (_, buffer) in zip(contents, batch, strict=True):
            disk_id = None if disk is None else next(ids)
            unsaved_id = None if unsaved is None else next(ids)
            out.append((disk_id, unsaved_id, buffer is not None))
    return out


async def jumps_back(
    workspace: Workspace,
    blobs: BlobStore,
    made: list[ev.FileSnapshot],
    skip: set[str],
    force: bool = False,
) -> tuple[list[ev.FileSnapshot], list[str]]:
    """The jumps that undo a restore's ``made`` changes, and the paths kept: those
    the restore did not write (``skip``) or that changed since it wrote them
    (unless ``force``)."""
    jumps: list[ev.FileSnapshot] = []
    kept: list[str] = []
    found = await files_now(workspace, blobs, [change.path for change in made])
    for change, (current_id, unsaved_id, _) in zip(made, found, strict=True):
        # As the restore left it: its content (as an editor may have normalised
        # it), or the unsaved text it gave the buffer, saved since (the user
        # keeping what the restore brought back).
        left = {change.after, change.buffer_after} if change.buffer_after else {change.after}
        if change.path in skip or (
            not force
            and current_id not in left
            and not await same_content(blobs, change.after, current_id)
        ):
            kept.append(change.path)
            continue
        jumps.append(
            ev.FileSnapshot(
                path=change.path,
                before=current_id,
                after=change.before,
                buffer_before=unsaved_id,
                jump=True,
                buffer_after=change.buffer_before,
                executable_before=change.executable_after,
                executable_after=change.executable_before,
            )
        )
    return jumps, kept
