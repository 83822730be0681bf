"""Checksummed JSON lines: how the file store frames each record on disk.

A record is one line ``{"crc":"<crc32 of payload, 8 hex>","event":<payload>}\\n``:
still JSON Lines (``jq`` reads it), and a line cut short or scribbled over by a
crash is told apart from a whole one without trusting the JSON parser to notice.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from itertools import accumulate
from typing import Any, TypeVar

import attrs
import orjson

from ..errors import CorruptLogError

_HEAD = b'{"crc":"'
_MID = b'","event":'
_CRC_AT = len(_HEAD)
_PAYLOAD_AT = len(_HEAD) + 8 + len(_MID)
_TAIL = b"}"

T = TypeVar("T")


def frame(payload: bytes) -> bytes:
    return b"%s%08x%s%s}\n" % (_HEAD, zlib.crc32(payload), _MID, payload)


def payload_of(line: bytes) -> memoryview | None:
    """The payload of one line (without its newline), or None if it is not whole."""
    if (
        len(line) <= _PAYLOAD_AT
        or not line.startswith(_HEAD)
        or line[_PAYLOAD_AT - len(_MID) : _PAYLOAD_AT] != _MID
        or not line.endswith(_TAIL)
    ):
        return None
    payload = memoryview(line)[_PAYLOAD_AT:-1]
    try:
        crc = int(line[len(_HEAD) : len(_HEAD) + 8], 16)
    except ValueError:
        return None
    return payload if zlib.crc32(payload) == crc else None


@attrs.define
class Scan:
    """Records read from a run of bytes, and where the whole ones end.

    ``offsets[i]`` is where record ``i`` starts (relative to the scan's start);
    ``end`` is where the last whole record ends; ``torn`` is set when bytes after
    ``end`` are not a whole record (a crash mid-write left them).
    """

    records: list
    offsets: list[int]
    end: int
    torn: bool


def scan(data: bytes, decode: Callable[[list[Any]], list[T]], where: str) -> Scan:
    """Decode every whole record in ``data`` (``decode`` maps parsed payloads to records).

    Damage followed by a whole record is not a torn tail but corruption of
    acknowledged data, so it raises :class:`CorruptLogError` instead of cutting.
    """
    lines = data.split(b"\n")
    # The piece after the last newline is empty when the data ends cleanly.
    tail = lines.pop()
    if not lines:
        return Scan([], [], 0, bool(tail))
    # The common case, a log with no damage, in a few C-level passes: checksum
    # every line, then parse all of them with one call.
    try:
        whole = all(
            line[_CRC_AT:_PAYLOAD_AT] == b"%08x%s" % (zlib.crc32(line[_PAYLOAD_AT:-1]), _MID)
            for line in lines
        )
    except TypeError:
        whole = False
    if whole:
        try:
            parsed = orjson.loads(b"[" + b",".join(lines) + b"]")
        except orjson.JSONDecodeError:
            whole = False
    if not whole:
        return _scan_line_by_line(lines, tail, decode, where)
    offsets = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    records = decode([record["event"] for record in parsed])
    return Scan(records, offsets, offsets[-1] + len(lines[-1]) + 1, bool(tail))


def _scan_line_by_line(
    lines: list[bytes], tail: bytes, decode: Callable[[list[Any]], list[T]], where: str
) -> Scan:
    records: list = []
    offsets: list[int] = []
    pos = 0
    for number, line in enumerate(lines):
        payload = payload_of(line)
        if payload is None:
            if any(payload_of(later) is not None for later in lines[number + 1 :]):
                raise CorruptLogError(
                    f"{where}: record {number + 1} (byte {pos}) is damaged and whole "
                    "records follow it; the file was changed by something other than "
                    "agent-host. Restore it from a backup or move it aside."
                )
            return Scan(records, offsets, pos, True)
        offsets.append(pos)
        try:
            records.extend(decode([orjson.loads(payload)]))
        except orjson.JSONDecodeError as exc:
            raise CorruptLogError(f"{where}: record {number + 1} is not JSON: {exc}") from exc
        pos += len(line) + 1
    return Scan(records, offsets, pos, bool(tail))
