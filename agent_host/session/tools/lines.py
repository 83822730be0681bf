"""The lines of a file read_file shows, found without decoding or splitting the file.

A 100 MB file split into a million ``str`` lines held the event loop for half a
second, and one ``decode`` of it holds the GIL for tens of milliseconds wherever it
runs. Here lines are counted and found with ``bytes.count`` and ``bytes.find`` a
megabyte at a time, and only the lines shown are decoded, so the work (done in a
thread) never holds the GIL for long.

Lines are numbered as :func:`~.files.split_lines` numbers them: only ``\\n`` ends a
line, a final ``\\n`` adds none, and a ``\\r`` before it is not part of the line.
"""

from __future__ import annotations

import codecs

import attrs

CHUNK = 1 << 20


@attrs.define
class Window:
    lines: list[str]
    """The lines shown, decoded (undecodable bytes as U+FFFD); a long one cut to
    ``max_line_chars`` characters."""
    lengths: list[int]
    """Each line's full length in characters."""
    total: int
    """How many lines the file has."""
    replaced: bool = False
    """Whether any shown line held bytes that are not UTF-8."""


def count_lines(data: bytes) -> int:
    newlines = sum(data.count(b"\n", i, i + CHUNK) for i in range(0, len(data), CHUNK))
    return newlines + (1 if data and not data.endswith(b"\n") else 0)


def line_start(data: bytes, number: int) -> int:
    """The byte offset where line ``number`` (from 1) starts."""
    skip = number - 1
    pos = 0
    while skip:
        end = min(pos + CHUNK, len(data))
        here = data.count(b"\n", pos, end)
        if here < skip:
            skip -= here
            pos = end
            continue
        while skip:
            pos = data.find(b"\n", pos, end) + 1
            skip -= 1
    return pos


def window(data: bytes, offset: int, limit: int, max_line_chars: int, max_chars: int) -> Window:
    """Lines ``offset`` .. ``offset + limit - 1`` of ``data``, stopping once
    ``max_chars`` characters of lines are gathered (at least one line)."""
    total = count_lines(data)
    shown = Window(lines=[], lengths=[], total=total)
    if offset > total:
        return shown
    pos = line_start(data, offset)
    size = 0
    for _ in range(min(limit, total - offset + 1)):
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        stop = end - 1 if end > pos and data[end - 1 : end] == b"\r" else end
        text, length, replaced = _decode_line(data, pos, stop, max_line_chars)
        if shown.lines and size + min(length, max_line_chars) > max_chars:
            break
        shown.lines.append(text)
        shown.lengths.append(length)
        shown.replaced = shown.replaced or replaced
        size += min(length, max_line_chars) + 1
        pos = end + 1
    return shown


def _decode_line(data: bytes, start: int, end: int, max_chars: int) -> tuple[str, int, bool]:
    """The line's first ``max_chars`` characters, its length, whether bytes were replaced."""
    if end - start <= CHUNK:
        raw = data[start:end]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            return text[:max_chars], len(text), True
        return text[:max_chars], len(text), False
    # A line of megabytes: decoded a chunk at a time, only its start kept.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    head = ""
    length = 0
    replaced = False
    for i in range(start, end, CHUNK):
        part = decoder.decode(data[i : min(i + CHUNK, end)], final=i + CHUNK >= end)
        replaced = replaced or "\ufffd" in part
        length += len(part)
        if len(head) < max_chars:
            head += part[: max_chars - len(head)]
    return head, length, replaced
