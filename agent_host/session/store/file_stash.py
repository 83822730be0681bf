"""What ``truncate`` cut from a file-store log, kept so the cut can be undone.

``truncated/<id>.jsonl`` holds one framed line (see framing) per truncation, written
and synced before the log is cut: a crash in between loses nothing. A line a crash
left half-written is a truncation that never happened, and is dropped on reading.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from .. import events as ev
from ..durable import fsync_dir
from ..errors import CorruptLogError
from . import framing
from .base import Truncation


def read_stash(path: Path) -> list[Truncation]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    found = framing.scan(data, partial(_decode, str(path)), str(path))
    if found.torn:
        os.truncate(path, found.end)
    return found.records


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
