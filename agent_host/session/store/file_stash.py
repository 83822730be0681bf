"""What ``truncate`` cut from a file-store log, kept so the cut can be undone.

``truncated/<id>.jsonl`` holds one framed line (see framing) per truncation, written
and synced before the log is cut: a crash in between loses nothing. Each line stands
alone, so one bad line costs only itself: reading keeps every whole record, and
moves any other line (a write a crash cut short, or damage) aside like a torn log
tail, to ``torn/<id>.truncated.<time_ns>.bin``, before rewriting the stash without
it. Reading never deletes the stash or raises for a bad line, so the other
truncations stay readable; callers hold the session's lock, so the rewrite is safe.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import orjson

from .. import events as ev
from ..durable import fsync_dir, write_atomically
from ..errors import CorruptLogError
from . import framing
from .info import Truncation

log = logging.getLogger(__name__)


def read_stash(path: Path) -> list[Truncation]:
    """The truncations stashed at ``path``, oldest first; bad lines are moved aside."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    payloads, whole, bad = framing.sift(data)
    if bad:
        try:
            _move_aside(path, whole, bad)
        except OSError as exc:  # a read-only or full store: read it as it is
            log.warning("%s: bad truncation records left in place: %s", path, exc)
    try:
        objects = orjson.loads(b"[" + b",".join(payloads) + b"]")
    except orjson.JSONDecodeError as exc:  # checksummed, so written that way: keep it
        raise CorruptLogError(f"{path}: a truncation is not JSON: {exc}") from exc
    return _decode(str(path), objects)


def _move_aside(path: Path, whole: bytes, bad: bytes) -> None:
    """Keep ``bad`` durably in torn/, then leave only the ``whole`` lines in the stash.

    In that order: a crash in between leaves the bad bytes in both places, and the
    next read moves them again, rather than nowhere.
    """
    torn = path.parent.parent / "torn"
    try:
        torn.mkdir(mode=0o700)
        fsync_dir(torn.parent)
    except FileExistsError:
        pass
    keep = torn / f"{path.stem}.truncated.{time.time_ns()}.bin"
    write_atomically(keep, bad, mode=0o600)
    write_atomically(path, whole, mode=0o600)
    log.warning(
        "%s: %d bytes that are not whole truncation records (damaged, or cut short by "
        "a crash) were moved to %s; the %d whole records are kept",
        path,
        len(bad),
        keep,
        whole.count(b"\n"),
    )


def add_to_stash(path: Path, truncation: Truncation) -> None:
    """Append ``truncation`` to the stash at ``path`` and make it durable."""
    payload = orjson.dumps(
        {
            "id": truncation.id,
            "seq": truncation.seq,
            "ts": truncation.ts,
            "events": [ev.to_dict(e) for e in truncation.events],
        }
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        created = os.fstat(fd).st_size == 0
        view = memoryview(framing.frame_batch([payload])[0])
        while view:
            view = view[os.write(fd, view) :]
        os.fdatasync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)


def _decode(where: str, objects: list[dict[str, Any]]) -> list[Truncation]:
    try:
        return [
            Truncation(d["id"], d["seq"], d["ts"], [ev.from_dict(e) for e in d["events"]])
            for d in objects
        ]
    except Exception as exc:
        raise CorruptLogError(f"{where}: a truncation could not be read: {exc}") from exc


def stash_size(path: Path) -> int | None:
    """The stash's size before a truncation adds to it (None: no stash yet)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def take_back(path: Path, size: int | None) -> None:
    """Take a failed truncate's record back out of the stash at ``path``, which was
    ``size`` bytes before it (see :func:`stash_size`)."""
    try:
        if size is None:
            path.unlink(missing_ok=True)
        else:
            os.truncate(path, size)
    except OSError as exc:
        log.error(
            "%s: a truncation that failed could not be taken back out (%s); "
            "its events are still in the log",
            path,
            exc,
        )
