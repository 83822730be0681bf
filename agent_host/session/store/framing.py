"""Checksummed JSON lines, grouped in batches: how the file store frames records.

A record is one line ``{"batch":"<f>","crc":"<8 hex>","event":<payload>}\\n``: still
JSON Lines (``jq`` reads it). The flag ``f`` places the line in the append it came
from: ``1`` a one-line append, ``s`` the first line of several, ``m`` a middle one,
``e`` the last. The checksum is the crc32 of the payload, started from the flag
byte, so both are covered. An append is *committed* once its last line is whole:
after a crash, lines of an append whose last line never made it are cut as a
unit, so an append is all or nothing on disk as well as in the API.

Torn or damaged. A crash leaves only two kinds of bad bytes: a write cut short (a
prefix of its lines; the file store writes over zeros, so nothing follows it) and,
after a power cut, holes of zeros where pages of an unsynced write never reached
the disk. So reading settles the first line that is not whole:

* it holds a NUL byte: a hole, a *torn* write. It and all after it are cut,
  unless a whole first line of a later append follows (appends are synced one
  after the other, so a hole cannot precede a later one): then it is damage.
* it is complete (ends in a newline) and has no NUL: no crash writes that, so it
  is *damage*, wherever it is, even in the last append: :class:`CorruptLogError`.
* it is the tail, the bytes after the last newline: torn if it is a prefix of a
  record (its frame so far as it goes). It is damage if it is not, or if all but
  its last byte is a whole record: a record whose newline was changed. No prefix
  is that: the longest, a line cut just before its newline, is whole as it is.

Lines that are all whole but end in an append without its commit line are torn
too: the writer died between lines. Only torn bytes are ever cut.
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
_CRC_AT = _FLAG_AT + len(b'1","crc":"')
_PAYLOAD_AT = _CRC_AT + 8 + len(b'","event":')
_TEMPLATE = b'{"batch":"1","crc":"00000000","event":'
_HEX = frozenset(b"0123456789abcdef")
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

    A torn tail is reported in the result, to be cut; damage (see the module's
    docstring) raises :class:`CorruptLogError`.
    """
    end = data.rfind(b"\n") + 1
    torn = end < len(data)  # bytes after the last newline: a write cut short?
    if end == 0:
        if torn:
            _check_tail(data, 0, 0, where)
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
        if torn:
            _check_tail(data[end:], len(offsets), end, where)
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
            _check_torn_line(lines, number, pos, where)
            break
        try:
            payloads.append(orjson.loads(memoryview(line)[_PAYLOAD_AT:-1]))
        except orjson.JSONDecodeError as exc:
            raise CorruptLogError(f"{where}: record {number + 1} is not JSON: {exc}") from exc
        offsets.append(pos)
        pos += len(line) + 1
        if line[_FLAG_AT] in _COMMIT:
            committed, end = len(payloads), pos
    else:
        if tail:
            _check_tail(tail, len(lines), pos, where)
    whole_size = sum(len(line) + 1 for line in lines) + len(tail)
    return Scan(decode(payloads[:committed]), offsets[:committed], end, end < whole_size)


def _check_torn_line(lines: list[bytes], number: int, pos: int, where: str) -> None:
    """Raise unless complete line ``number``, not whole, is a hole a crash left."""
    line = lines[number]
    if any(_whole(later) and later[_FLAG_AT] in _START for later in lines[number + 1 :]):
        raise CorruptLogError(
            f"{where}: record {number + 1} (byte {pos}) is damaged and later "
            "appends follow it; the file was changed by something other than "
            "agent-host. Restore it from a backup or move it aside."
        )
    if b"\0" not in line:
        raise _damaged(where, number, pos, "its line is complete, not a write cut short")


def _check_tail(tail: bytes, number: int, pos: int, where: str) -> None:
    """Raise unless ``tail``, the bytes after the last newline, is a torn write."""
    if b"\0" in tail:
        return  # a hole: the rest of an unsynced write
    if _whole(tail[:-1]):
        raise _damaged(where, number, pos, "it is whole but for its newline")
    if not _begins_record(tail):
        raise _damaged(where, number, pos, "the bytes after the last line are no record")


def _begins_record(data: bytes) -> bool:
    """Whether ``data`` could be the start of a record: its frame, as far as it goes."""
    head = bytearray(data[:_PAYLOAD_AT])
    if len(head) > _FLAG_AT and head[_FLAG_AT] in _FLAGS:
        head[_FLAG_AT] = ord("1")
    for at in range(_CRC_AT, min(len(head), _CRC_AT + 8)):
        if head[at] in _HEX:
            head[at] = ord("0")
    return head == _TEMPLATE[: len(head)]


def _damaged(where: str, number: int, pos: int, why: str) -> CorruptLogError:
    return CorruptLogError(
        f"{where}: record {number + 1} (byte {pos}) is damaged: {why}, which no crash "
        "leaves, so the file was changed by something other than agent-host. Restore "
        "it from a backup or move it aside."
    )


def sift(data: bytes) -> tuple[list[bytes], bytes, bytes]:
    """For a file whose every line is a record of its own (the truncation stash):
    the payloads of its whole records, their lines as in ``data``, and the bytes of
    every other line (damaged or torn), in order."""
    payloads: list[bytes] = []
    whole: list[bytes] = []
    other: list[bytes] = []
    lines = [line + b"\n" for line in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]  # what follows the last newline, if anything
    for line in filter(None, lines):
        if line[-1:] == b"\n" and _whole(line[:-1]):
            payloads.append(line[_PAYLOAD_AT:-2])
            whole.append(line)
        else:
            other.append(line)
    return payloads, b"".join(whole), b"".join(other)


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
