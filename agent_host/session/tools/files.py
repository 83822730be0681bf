"""read_file, write_file, edit_file, delete_file.

Reads go through the workspace; every change goes through ``ctx.change_file`` so
it is in the session log before it is on disk.

No file is held whole past :data:`~..limits.MAX_FILE_BYTES` (8 MiB, the size
capture snapshots up to): a larger one is read a window at a time
(:func:`read_large`), and is not changed at all -- its old content could not be
snapshotted, so the change could not be undone.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import FileTooLarge, ToolError
from ..limits import MAX_FILE_BYTES
from .context import ToolContext, display_path
from .lines import CHUNK, count_lines, line_start, window
from .specs import READ_DEFAULT_LINES, READ_MAX_CHARS, READ_MAX_LINE_CHARS

# Undecodable bytes become lone surrogates and back, so an edit to a file that is not
# quite UTF-8 (a stray Latin-1 byte) changes only the text it was asked to change.
_LOSSLESS = "surrogateescape"
_SNIPPET_CONTEXT = 3
_SNIPPET_MAX_LINES = 40
LARGE_WINDOW = 1 << 20
"""Of a file over the limit, read_file reads at most this much past the first line
it shows: READ_MAX_CHARS characters of lines fit in it whatever their script."""


def is_binary(data: bytes) -> bool:
    # What git and grep go by: a NUL byte near the start.
    return b"\x00" in data[:8192]


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: only \\n ends a line, a final \\n adds none."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def numbered(number: int, line: str, max_chars: int = READ_MAX_LINE_CHARS, length: int = -1) -> str:
    """``line`` as read_file shows it; ``length``: its full length, if ``line`` was cut already."""
    length = len(line) if length < 0 else length
    if length > max_chars:
        line = f"{line[:max_chars]}... [line cut: {length - max_chars:,} more characters]"
    return f"{number:6}\t{line}"


def too_large_to_change(shown: str, size: int) -> ToolError:
    return ToolError(
        f"{shown} is {size:,} bytes, more than the {MAX_FILE_BYTES >> 20} MiB the agent "
        "snapshots before a change, so a change to it could not be undone: the file "
        "tools do not change files this large. Ask the user to change it."
    )


async def _read_existing(ctx: ToolContext, path: str, shown: str, doing: str) -> bytes:
    """The file's content; FileTooLarge past the limit when reading, else a ToolError
    refusing the change."""
    try:
        data = await ctx.workspace.read_bytes(path, limit=MAX_FILE_BYTES)
    except FileTooLarge as e:
        if doing == "read":
            raise
        raise too_large_to_change(shown, e.size) from None
    if data is None:
        create = " (or write_file to create it)" if doing == "edit" else ""
        raise ToolError(
            f"{shown} does not exist, so there is nothing to {doing}; "
            f"use list_files to find the right path{create}"
        )
    return data


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8", _LOSSLESS)
    except UnicodeEncodeError as e:
        raise ToolError(
            f"{what} is not valid Unicode (a lone surrogate at position {e.start}); "
            "remove it and try again"
        ) from None


async def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = args["path"]
    offset: int = args.get("offset", 1)
    limit: int = args.get("limit", READ_DEFAULT_LINES)
    shown = display_path(ctx, path)
    try:
        data = await _read_existing(ctx, path, shown, "read")
    except FileTooLarge as e:
        return await read_large(ctx, path, shown, offset, limit, e.size)
    if is_binary(data):
        return f"{shown} is a binary file ({len(data):,} bytes); its content is not shown."
    if not data:
        return f"{shown} is empty (0 bytes)."
    # Counted, found and decoded a megabyte at a time, in a thread: a huge file
    # never holds the event loop (tools/lines.py).
    shown_lines = await asyncio.to_thread(
        window, data, offset, limit, READ_MAX_LINE_CHARS, READ_MAX_CHARS
    )
    total = shown_lines.total
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {total} lines")
    notes = []
    if shown_lines.replaced:
        notes.append("[the file is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    rows: list[str] = []
    size = 0
    last = offset - 1
    for line, length in zip(shown_lines.lines, shown_lines.lengths, strict=True):
        row = numbered(last + 1, line, length=length)
        if rows and size + len(row) > READ_MAX_CHARS:
            break
        rows.append(row)
        size += len(row) + 1
        last += 1
    if last < total:
        notes.append(f"[showing lines {offset}-{last} of {total}; read on with offset={last + 1}]")
    return "\n".join(rows + ([""] + notes if notes else []))


async def read_large(
    ctx: ToolContext, path: str, shown: str, offset: int, limit: int, size: int
) -> str:
    """read_file of a file over MAX_FILE_BYTES: a megabyte at a time from the disk
    to the first line shown, then one window; its lines are not counted (that is
    reading all of it), so the note says where to read on instead."""
    workspace = ctx.workspace
    head = await workspace.read_range(path, 0, 8192)
    if head is None:
        raise ToolError(f"{shown} does not exist; use list_files to find the right path")
    if is_binary(head):
        return f"{shown} is a binary file ({size:,} bytes); its content is not shown."
    start, lines_before = 0, 0
    while lines_before < offset - 1:
        chunk = await workspace.read_range(path, start, CHUNK)
        if not chunk:
            raise ToolError(f"offset {offset} is past the end of {shown}, which has fewer lines")
        here = chunk.count(b"\n")
        if lines_before + here >= offset - 1:
            start += await asyncio.to_thread(line_start, chunk, offset - lines_before)
            break
        lines_before += here
        start += len(chunk)
    data = await workspace.read_range(path, start, LARGE_WINDOW) or b""
    cut = len(data) == LARGE_WINDOW and start + len(data) < size
    if cut and b"\n" in data:
        data = data[: data.rindex(b"\n") + 1]  # whole lines only
    if not data:
        raise ToolError(f"offset {offset} is past the end of {shown}")
    shown_lines = await asyncio.to_thread(
        window, data, 1, limit, READ_MAX_LINE_CHARS, READ_MAX_CHARS
    )
    rows = [
        numbered(offset + i, line, length=length)
        for i, (line, length) in enumerate(zip(shown_lines.lines, shown_lines.lengths, strict=True))
    ]
    last = offset + len(rows) - 1
    notes = []
    if cut and b"\n" not in data:
        notes.append(f"[line {offset} runs on past {LARGE_WINDOW:,} bytes; its start is shown]")
    if shown_lines.replaced:
        notes.append("[the file is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if len(rows) <= data.count(b"\n"):
        end = start + await asyncio.to_thread(line_start, data, len(rows) + 1)
    else:
        end = start + len(data)  # the last line, with no line break after it
    if end < size or cut:
        notes.append(
            f"[showing lines {offset}-{last} of {shown}, {size:,} bytes: over "
            f"{MAX_FILE_BYTES:,}, so its lines are not counted; read on with offset={last + 1}]"
        )
    return "\n".join(rows + ([""] + notes if notes else []))


async def write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path, content = args["path"], args["content"]
    shown = display_path(ctx, path)
    data = _encode(content, "content")
    try:
        before = await ctx.workspace.read_bytes(path, limit=MAX_FILE_BYTES)
    except FileTooLarge as e:
        raise too_large_to_change(shown, e.size) from None
    if before == data:
        return f"{shown} already has exactly this content; nothing changed."
    await ctx.change_file(shown, data)
    verb = "Created" if before is None else "Wrote"
    return f"{verb} {shown} ({len(data):,} bytes, {count_lines(data)} lines)."


async def edit_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path, old, new = args["path"], args["old_string"], args["new_string"]
    replace_all: bool = args.get("replace_all", False)
    if old == "":
        raise ToolError(
            "old_string is empty; give the exact text to replace (to create a file or "
            "replace all of it, use write_file)"
        )
    if old == new:
        raise ToolError("old_string and new_string are the same, so the edit would change nothing")
    shown = display_path(ctx, path)
    data = await _read_existing(ctx, path, shown, "edit")
    if is_binary(data):
        raise ToolError(f"{shown} is a binary file; edit_file only edits text files")
    text = data.decode("utf-8", _LOSSLESS)
    old, new, count = _locate(text, old, new)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {shown}. It must match the file exactly, "
            "including whitespace and indentation, and must not include read_file's line "
            "numbers; read the file again to see its current content."
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}; include more of the surrounding "
            "lines so it matches exactly one place, or set replace_all to true to replace "
            "every occurrence."
        )
    if replace_all:
        replaced = text.count(old)
        new_text = text.replace(old, new)
    else:
        replaced = 1
        new_text = text.replace(old, new, 1)
    await ctx.change_file(shown, _encode(new_text, "new_string"))
    summary = f"Edited {shown}: replaced {replaced} occurrence{'s' if replaced > 1 else ''}."
    if replaced > 1:
        return summary
    return f"{summary}\n{_snippet(new_text, text.index(old), new)}"


def _locate(text: str, old: str, new: str) -> tuple[str, str, int]:
    """The strings to replace with, and how many places ``old`` matches.

    Overlapping matches count: in "aaa", "aa" could mean either place, so it is
    ambiguous even though str.count finds it once. A file with CRLF line ends is
    matched with the model's \\n turned into \\r\\n, keeping the file's line ends.
    """
    count = _count_overlapping(text, old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r" not in old:
        crlf_old, crlf_new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        crlf_count = _count_overlapping(text, crlf_old)
        if crlf_count:
            return crlf_old, crlf_new, crlf_count
    return old, new, count


def _count_overlapping(text: str, sub: str) -> int:
    count, at = 0, text.find(sub)
    while at >= 0:
        count += 1
        at = text.find(sub, at + 1)
    return count


def _snippet(text: str, start: int, inserted: str) -> str:
    """The edited lines with a little context, numbered as read_file shows them.

    Found from the edit outwards with ``find``: splitting a file of a million lines
    to show a dozen held the event loop for a second.
    """
    first = text.count("\n", 0, start) + 1
    last = first + inserted.count("\n")
    total = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    lo = max(1, first - _SNIPPET_CONTEXT)
    hi = min(total, last + _SNIPPET_CONTEXT, lo + _SNIPPET_MAX_LINES - 1)
    if hi < lo:
        return "(the file is now empty)"
    pos = text.rfind("\n", 0, start) + 1  # where line `first` starts
    for _ in range(first - lo):
        pos = text.rfind("\n", 0, pos - 1) + 1
    rows = []
    for number in range(lo, hi + 1):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end]
        rows.append(numbered(number, line[:-1] if line.endswith("\r") else line))
        pos = end + 1
    return f"Lines {lo}-{hi} now read:\n" + "\n".join(rows)


async def delete_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = args["path"]
    shown = display_path(ctx, path)
    await _read_existing(ctx, path, shown, "delete")
    await ctx.change_file(shown, None)
    return f"Deleted {shown}."
