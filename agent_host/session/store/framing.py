"""Checksummed JSON lines, grouped in batches: how the file store frames records.

A record is one line ``{"batch":"<f>","crc":"<8 hex>","event":<payload>}\\n``: still
JSON Lines (``jq`` reads it). The flag ``f`` places the line in the append it came
from: ``1`` a one-line append, ``s`` the first line of several, ``m`` a middle one,
``e`` the last. The checksum is the crc32 of the payload, started from the flag
byte, so both are covered. An append is *committed* once its last line is whole:
after a crash, lines of an append whose last line never made it are cut as a
unit, so an append is all or nothing on disk as well as in the API.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from itertools import accumulate
from typing import Any, TypeVar

import attrs
import orjson

from ..errors import CorruptLogError

_HEAD = b'{"batch":"'
_FLAG_AT = len(_HEAD)
_PAYLOAD_AT = _FLAG_AT + len(b'1","crc":"') + 8 + len(b'","event":')
_COMMIT = frozenset(b"1e")
_START = frozenset(b"1s")
_FLAGS = frozenset(b"1sme")
WINDOW = 1 << 20

T = TypeVar("T")


def frame_batch(payloads: list[bytes]) -> list[bytes]:
    """The lines of one append, flagged so a partial write of them is detectable."""
    if len(payloads) == 1:
        return [_frame(payloads[0], ord("1"))]
    flags = [ord("s")] + [ord("m")] * (len(payloads) - 2) + [ord("e")]
    return [_frame(p, f) for p, f in zip(payloads, flags, strict=True)]


def _frame(payload: bytes, flag: int) -> bytes:
    crc = zlib.crc32(payload, flag)
    return b'{"batch":"%c","crc":"%08x","event":%s}\n' % (flag, crc, payload)


def _whole(line: bytes) -> bool:
    """Whether ``line`` (without its newline) is a record exactly as written."""
    if len(line) <= _PAYLOAD_AT or line[_FLAG_AT] not in _FLAGS or line[-1] != 0x7D:
        return False
    flag = line[_FLAG_AT]
    crc = zlib.crc32(memoryview(line)[_PAYLOAD_AT:-1], flag)
    return line[:_PAYLOAD_AT] == b'{"batch":"%c","crc":"%08x","event":' % (flag, crc)


def _all_whole(lines: list[bytes]) -> bool:
    """:func:`_whole` for every line, in list comprehensions (a third faster)."""
    crc32 = zlib.crc32
    try:
        if not {line[_FLAG_AT] for line in lines} <= _FLAGS:
            return False
        expected = [
            b'{"batch":"%c","crc":"%08x","event":'
            % (line[_FLAG_AT], crc32(line[_PAYLOAD_AT:-1], line[_FLAG_AT]))
            for line in lines
        ]
    except IndexError:  # a line too short to hold a flag
        return False
    return expected == [line[:_PAYLOAD_AT] for line in lines]


@attrs.define
class Scan:
    """Records read from a run of bytes, and where the committed ones end.

    ``offsets[i]`` is where record ``i`` starts (relative to the scan's start);
    ``end`` is where the last committed append ends; ``torn`` is set when bytes
    follow ``end`` (an append a crash left unfinished).
    """

    records: list
    offsets: list[int]
    end: int
    torn: bool


def scan(data: bytes, decode: Callable[[list[Any]], list[T]], where: str) -> Scan:
    """Decode the committed records in ``data`` (``decode`` maps parsed payloads).

    Damage in the last append is a torn tail; damage followed by a later append
    is corruption of acknowledged data and raises :class:`CorruptLogError`.
    """
    end = data.rfind(b"\n") + 1
    torn = end < len(data)  # bytes after the last newline: a write cut short
    if end == 0:
        return Scan([], [], 0, torn)
    # The common case, an undamaged log, in a few C-level passes per window of
    # about 1 MiB: check every line, then parse the window with one call. Windows
    # keep a resume's peak memory near the log's size instead of three times it.
    records: list = []
    offsets: list[int] = []
    start = 0
    while start < end:
        stop = data.rfind(b"\n", start, start + WINDOW) + 1 or data.find(b"\n", start) + 1
        lines = data[start : stop - 1].split(b"\n")
        if stop == end and lines[-1][_FLAG_AT : _FLAG_AT + 1] not in (b"1", b"e"):
            break  # the last append is incomplete: settled line by line below
        if not _all_whole(lines):
            break
        try:
            parsed = orjson.loads(b"[" + b",".join(lines) + b"]")
        except orjson.JSONDecodeError:
            break
        offsets.extend(accumulate((len(line) + 1 for line in lines[:-1]), initial=start))
        records.extend(decode([record["event"] for record in parsed]))
        start = stop
    else:
        return Scan(records, offsets, end, torn)
    return _scan_line_by_line(data.split(b"\n"), decode, where)


def _scan_line_by_line(
    lines: list[bytes], decode: Callable[[list[Any]], list[T]], where: str
) -> Scan:
    tail = lines.pop()
    payloads: list[Any] = []
    offsets: list[int] = []
    committed = 0  # records in committed appends
    end = 0  # where the last committed append ends
    pos = 0
    for number, line in enumerate(lines):
        if not _whole(line):
            if any(_whole(later) and later[_FLAG_AT] in _START for later in lines[number + 1 :]):
                raise CorruptLogError(
                    f"{where}: record {number + 1} (byte {pos}) is damaged and later "
                    "appends follow it; the file was changed by something other than "
                    "agent-host. Restore it from a backup or move it aside."
                )
            break
        try:
            payloads.append(orjson.loads(memoryview(line)[_PAYLOAD_AT:-1]))
        except orjson.JSONDecodeError as exc:
            raise CorruptLogError(f"{where}: record {number + 1} is not JSON: {exc}") from exc
        offsets.append(pos)
        pos += len(line) + 1
        if line[_FLAG_AT] in _COMMIT:
            committed, end = len(payloads), pos
    whole_size = sum(len(line) + 1 for line in lines) + len(tail)
    return Scan(decode(payloads[:committed]), offsets[:committed], end, end < whole_size)


def as_last_of_batch(line: bytes) -> bytes:
    """``line`` (with its newline) re-framed as the last line of its append.

    Truncating inside an append keeps its first lines; their last one must then
    commit them, or the next open would cut them as a torn tail.
    """
    flag = line[_FLAG_AT]
    closing = {ord("s"): ord("1"), ord("m"): ord("e")}.get(flag, flag)
    return _frame(line[_PAYLOAD_AT:-2], closing)


def commits(line_start: bytes) -> bool:
    """Whether the line beginning with ``line_start`` ends an append."""
    return len(line_start) > _FLAG_AT and line_start[_FLAG_AT] in _COMMIT


FLAG_END = _FLAG_AT + 1
