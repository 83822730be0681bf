"""list_files and grep: finding files and text without leaving the workspace."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ..errors import FileTooLarge, PathOutsideWorkspace, ToolError
from ..limits import MAX_FILE_BYTES
from .context import ToolContext
from .files import is_binary, split_lines
from .regex import PythonPattern, Re2Pattern, compile_pattern
from .specs import GREP_MAX_FILES, GREP_MAX_LINE_CHARS, GREP_MAX_MATCHES, LIST_LIMIT

_GLOB_CHARS = frozenset("*?[{\\")


def _has_glob(pattern: str) -> bool:
    return any(c in _GLOB_CHARS for c in pattern)


def _glob_escape(path: str) -> str:
    from wcmatch import glob as wcglob

    return wcglob.escape(path)


async def list_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern: str | None = args.get("pattern")
    if pattern is not None and not pattern.strip():
        pattern = None
    if pattern is not None and not _has_glob(pattern):
        # A plain directory name means "what is in it", which is what models mean by it.
        real = ctx.workspace.resolve(pattern)
        if real.is_dir():
            pattern = _under(ctx.workspace.relative(real), None)
    files = await ctx.workspace.list_files(pattern, limit=LIST_LIMIT + 1)
    if not files:
        if pattern is None:
            return "The workspace has no files (or all are excluded by .gitignore)."
        return f"No files match {args.get('pattern')!r}."
    lines = files[:LIST_LIMIT]
    if len(files) > LIST_LIMIT:
        lines.append(
            f"\n[only the first {LIST_LIMIT} paths are shown; use a narrower pattern "
            "to see the rest]"
        )
    return "\n".join(lines)


def _under(directory: str, glob: str | None) -> str | None:
    """A glob for ``glob`` below ``directory`` (a display path), or everything in it."""
    if directory == ".":
        return glob
    prefix = _glob_escape(directory) + "/"
    if glob is None:
        return prefix
    glob = glob.strip()
    while glob.startswith("./"):
        glob = glob[2:]
    # As in list_files: a glob without '/' matches names at any depth.
    return prefix + glob.lstrip("/") if "/" in glob else prefix + "**/" + glob


async def grep(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern: str = args["pattern"]
    path: str | None = args.get("path")
    glob: str | None = args.get("glob") or None
    compiled = compile_pattern(pattern)
    where = ""
    if path is None or path in ("", "."):
        files = await ctx.workspace.list_files(glob, limit=GREP_MAX_FILES + 1)
    else:
        real = ctx.workspace.resolve(path)
        shown = ctx.workspace.relative(real)
        where = f" in {shown}"
        if real.is_file():
            files = [shown]
        elif real.is_dir():
            files = await ctx.workspace.list_files(_under(shown, glob), limit=GREP_MAX_FILES + 1)
        else:
            raise ToolError(f"{shown} does not exist; use list_files to find the right path")
    notes = []
    if len(files) > GREP_MAX_FILES:
        files = files[:GREP_MAX_FILES]
        notes.append(f"[searched only the first {GREP_MAX_FILES:,} files; narrow path or glob]")
    matches: list[str] = []
    too_large: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(compiled, PythonPattern):
            await stack.enter_async_context(compiled)
        for name in files:
            try:
                data = await ctx.workspace.read_bytes(name, limit=MAX_FILE_BYTES)
            except FileTooLarge:
                too_large.append(name)  # a data file, not source: said, not searched
                continue
            except (ToolError, PathOutsideWorkspace, OSError):
                continue  # vanished, unreadable or not a regular file: not worth failing over
            if not data or is_binary(data):
                continue
            room = GREP_MAX_MATCHES + 1 - len(matches)
            matches += await _grep_file(compiled, name, data, room)
            if len(matches) > GREP_MAX_MATCHES:
                matches = matches[:GREP_MAX_MATCHES]
                notes.append(
                    f"[stopped after {GREP_MAX_MATCHES} matching lines; narrow the pattern, "
                    "path or glob]"
                )
                break
    if too_large:
        names = ", ".join(too_large[:5])
        if len(too_large) > 5:
            names += f" and {len(too_large) - 5:,} more"
        notes.append(
            f"[not searched, being over {MAX_FILE_BYTES:,} bytes: {names}; read_file reads "
            "such a file a window at a time]"
        )
    if not matches:
        scope = f" (glob {glob!r})" if glob else ""
        return f"No matches for {pattern!r}{where}{scope}." + "".join("\n" + n for n in notes)
    return "\n".join(matches + ([""] + notes if notes else []))


async def _grep_file(
    compiled: Re2Pattern | PythonPattern, name: str, data: bytes, room: int
) -> list[str]:
    if isinstance(compiled, Re2Pattern):
        # In a thread: RE2 releases the GIL, so the event loop runs meanwhile.
        hits = await asyncio.to_thread(compiled.hits, data, room)
        return [_shown(name, n, line.decode("utf-8", errors="replace")) for n, line in hits]
    lines = split_lines(data.decode("utf-8", errors="replace"))
    return [_shown(name, n, lines[n - 1]) for n in await compiled.hits(lines, room)]


def _shown(name: str, number: int, line: str) -> str:
    if len(line) > GREP_MAX_LINE_CHARS:
        line = line[:GREP_MAX_LINE_CHARS] + " [...]"
    return f"{name}:{number}:{line}"
