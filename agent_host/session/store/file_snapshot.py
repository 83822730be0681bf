"""The file store's resume snapshots (see session.resume_snapshot), and a long
log's last events read from its end, for a process that has not read the log.

``snapshots/<id>.snap`` holds the seq it was taken at on its first line, then the
snapshot. It is written to a temporary file and renamed over the last one, not
synced: it is a cache of a fold of the log, and the reader checks it (its own
checksums, and the log's event at that seq), so a crash that leaves the old one,
none, or a damaged one costs a fold of the log, never a wrong resume.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ..errors import CorruptLogError
from ..events import Event
from . import framing, log_file

_FIRST_READ = 1 << 16


def write(path: str, head: int, data: bytes) -> None:
    # One temporary name per thread: two writers never share one half-written file.
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(b"%d\n" % head)
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read(path: str, limit: int | None = None) -> tuple[int, bytes] | None:
    """The seq a snapshot was taken at and the snapshot (its first ``limit`` bytes);
    None if there is none or its first line is damaged (the snapshot's own checks
    catch the rest)."""
    try:
        with open(path, "rb") as f:
            data = f.read(-1 if limit is None else limit + 24)
    except FileNotFoundError:
        return None
    newline = data.find(b"\n", 0, 24)
    try:
        head = int(data[:newline])
    except ValueError:
        return None
    end = None if limit is None else newline + 1 + limit
    return head, data[newline + 1 : end]


def tail_records(
    fd: int, where: str, decode: Callable[[list[Any]], list[Event]], first_seq: int = 0
) -> tuple[list[Event], list[int], int] | None:
    """The log's last events -- back to ``first_seq`` at least, if it has it --
    where their lines start, and where its content ends; read from its end. None
    when that cannot be settled here (a torn or damaged tail, seqs out of order):
    a full read settles it, repairing or raising as it does for any read."""
    end = log_file.content_end(fd, os.lseek(fd, 0, os.SEEK_END))
    want = _FIRST_READ
    while end:
        start = max(0, end - want)
        data = os.pread(fd, end - start, start)
        if not data.endswith(b"\n"):
            return None
        if start:
            cut = data.find(b"\n") + 1  # the first line may start before the read
            if cut == len(data):
                want *= 4
                continue
            data, start = data[cut:], start + cut
        try:
            found = framing.scan(data, decode, where)
        except CorruptLogError:
            return None
        events = found.records
        if found.torn or not events:
            return None
        seqs = [e.seq for e in events]
        if seqs != list(range(seqs[0], seqs[0] + len(seqs))) or (start == 0 and seqs[0] != 1):
            return None
        if seqs[0] <= max(first_seq, 1) or not start:
            return events, [start + offset for offset in found.offsets], end
        want *= 4
    return [], [], 0
