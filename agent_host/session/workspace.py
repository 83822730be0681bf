"""The folders an agent works in, and the one way tools and restore touch them.

Tools read, write and run commands only through a :class:`Workspace`, so the same
tools work on plain folders (:class:`DiskWorkspace`, for the CLI and CI) and inside
an editor, where an ``EditorWorkspace`` sends writes through LSP
``workspace/applyEdit`` so they land in open buffers. The protocol is kept small
and async for that reason.

Every path is checked against the roots with symlinks followed: a path the model
writes is never trusted to stay inside by its spelling alone.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import stat
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Protocol

import attrs
import pathspec

from .errors import PathOutsideWorkspace, ToolError


@attrs.define
class CommandResult:
    exit_code: int | None
    """The shell's exit status; negative for a signal; None when it timed out."""
    output: str
    """stdout and stderr as they interleaved, cut in the middle if too long."""
    timed_out: bool = False
    truncated: bool = False


class Workspace(Protocol):
    roots: list[Path]
    """Absolute, symlink-free folders; the first one is where relative paths start."""

    def resolve(self, path: str) -> Path:
        """The real path of ``path``; PathOutsideWorkspace if it is outside the roots."""
        ...

    def relative(self, path: Path) -> str:
        """The display path events and tool output use for ``path``."""
        ...

    async def read_bytes(self, path: str) -> bytes | None:
        """The file's content, None if it does not exist; ToolError for a directory."""
        ...

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the file's content atomically, creating parent directories."""
        ...

    async def delete(self, path: str) -> None:
        """Remove the file; a file that does not exist is fine."""
        ...

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        """Up to ``limit`` display paths, sorted, minus what .gitignore excludes."""
        ...

    async def run_command(
        self, command: str, timeout: float = 120.0, max_output: int = 30_000
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` in the first root."""
        ...


class DiskWorkspace:
    """A :class:`Workspace` over plain folders on this machine."""

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        if not roots:
            raise ValueError("a workspace needs at least one root folder")
        resolved = []
        for root in roots:
            real = Path(os.path.realpath(root))
            if not real.is_dir():
                raise NotADirectoryError(f"workspace root {root} is not a directory")
            resolved.append(real)
        self.roots: list[Path] = resolved

    def __repr__(self) -> str:
        return f"DiskWorkspace({[str(r) for r in self.roots]})"

    def resolve(self, path: str) -> Path:
        return resolve_in_roots(self.roots, path)

    def relative(self, path: Path) -> str:
        return relative_in_roots(self.roots, path)

    async def read_bytes(self, path: str) -> bytes | None:
        real = self.resolve(path)
        return await asyncio.to_thread(_read_file, real, path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        real = self.resolve(path)
        await asyncio.to_thread(_write_atomic, real, bytes(data), path)

    async def delete(self, path: str) -> None:
        real = self.resolve(path)
        await asyncio.to_thread(_delete_file, real, path)

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        return await asyncio.to_thread(_list_files, self, pattern, limit)

    async def run_command(
        self, command: str, timeout: float = 120.0, max_output: int = 30_000
    ) -> CommandResult:
        return await run_shell(command, self.roots[0], timeout, max_output)


# --- paths -------------------------------------------------------------------------


def resolve_in_roots(roots: Sequence[Path], path: str) -> Path:
    """``path`` (relative to the first root, or absolute) with every symlink followed.

    A file that does not exist yet resolves through its nearest existing parent,
    so a symlinked directory cannot smuggle a new file outside the roots.
    """
    if not isinstance(path, str):
        raise ToolError(f"a path must be a string, not {type(path).__name__}")
    if not path:
        raise ToolError(f"the path is empty; give a path relative to {roots[0]}")
    if "\x00" in path:
        raise ToolError(f"the path {path!r} contains a NUL byte")
    # realpath (non-strict) resolves the existing prefix and appends the rest.
    real = Path(os.path.realpath(os.path.join(roots[0], path)))
    if not any(real.is_relative_to(root) for root in roots):
        where = ", ".join(str(r) for r in roots)
        shown = "" if str(real) == path else f" (resolves to {real})"
        raise PathOutsideWorkspace(
            f"{path!r}{shown} is outside the workspace; paths must stay inside {where}"
        )
    return real


def relative_in_roots(roots: Sequence[Path], path: Path) -> str:
    """Posix path relative to the first root; absolute for files of the other roots.

    The result resolves back to the same file, so events and tool output can be
    fed straight back to :meth:`Workspace.resolve`.
    """
    joined = os.path.join(roots[0], path)
    # The lexical form first: it is what the caller spelled (and free); the real
    # path only when the spelling went through a symlink into a root.
    for candidate in (Path(os.path.normpath(joined)), Path(os.path.realpath(joined))):
        if candidate.is_relative_to(roots[0]):
            return candidate.relative_to(roots[0]).as_posix()
        for root in roots[1:]:
            if candidate.is_relative_to(root):
                return candidate.as_posix()
    where = ", ".join(str(r) for r in roots)
    raise PathOutsideWorkspace(f"{path} is outside the workspace roots {where}")


# --- files -------------------------------------------------------------------------


def _stat(real: Path) -> os.stat_result | None:
    try:
        return os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _check_regular(st: os.stat_result, shown: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        # Reading a FIFO would block forever; devices and sockets are not files either.
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device)")


def _read_file(real: Path, shown: str) -> bytes | None:
    st = _stat(real)
    if st is None:
        return None
    _check_regular(st, shown)
    try:
        with open(real, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_atomic(real: Path, data: bytes, shown: str) -> None:
    """Write via a temp file in the same directory so readers see old or new, whole."""
    st = _stat(real)
    if st is not None:
        _check_regular(st, shown)
    parent = real.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"cannot create {shown}: a parent of it is a file, not a folder") from None
    tmp = parent / f".{real.name}.{secrets.token_hex(6)}.tmp"
    # O_CREAT with 0o666 lets the umask decide a new file's mode, as any editor would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if st is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode))
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, real)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(parent)


def _delete_file(real: Path, shown: str) -> None:
    st = _stat(real)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory; only files can be deleted")
    with suppress(FileNotFoundError):
        os.unlink(real)
    _fsync_dir(real.parent)


def _fsync_dir(path: Path) -> None:
    with suppress(OSError):  # some filesystems refuse fsync on directories
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- listing -------------------------------------------------------------------------

_IgnoreStack = tuple[tuple[str, pathspec.GitIgnoreSpec], ...]


def _list_files(ws: DiskWorkspace, pattern: str | None, limit: int) -> list[str]:
    found: set[str] = set()
    for index, root in enumerate(ws.roots):
        regex = None if pattern is None else glob_regex(_pattern_in_root(pattern, root))
        for rel in walk_files(root, ws.roots):
            if regex is not None and not regex.match(rel):
                continue
            # Roots may nest; relative() picks one spelling so nothing is listed twice.
            found.add(rel if index == 0 else ws.relative(root / rel))
    return sorted(found)[: max(limit, 0)]


def _pattern_in_root(pattern: str, root: Path) -> str:
    # Models often glob with absolute paths; make those relative to the root.
    prefix = root.as_posix().rstrip("/") + "/"
    return "/" + pattern[len(prefix) :] if pattern.startswith(prefix) else pattern


def walk_files(root: Path, roots: Sequence[Path]) -> Iterator[str]:
    """Root-relative posix paths of the files under ``root`` that git would not ignore.

    Each directory's ``.gitignore`` applies below it, deeper files overriding
    shallower ones as in git; an ignored directory is not entered (git cannot
    re-include a file under one either). ``.git`` is always skipped, symlinked
    directories are not followed, and symlinked files are listed only when they
    point at a file inside the workspace.
    """
    base: _IgnoreStack = ()
    exclude = _load_ignore(root / ".git" / "info" / "exclude")
    if exclude is not None:
        base = (("", exclude),)
    stack: list[tuple[str, _IgnoreStack]] = [("", base)]
    while stack:
        rel_dir, specs = stack.pop()
        abs_dir = root / rel_dir if rel_dir else root
        spec = _load_ignore(abs_dir / ".gitignore")
        if spec is not None:
            specs = (*specs, (rel_dir, spec))
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            continue  # an unreadable directory should not fail the whole listing
        for entry in entries:
            if entry.name == ".git":
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not _ignored(specs, rel, is_dir=True):
                        stack.append((rel, specs))
                    continue
                if entry.is_symlink():
                    target = Path(os.path.realpath(entry.path))
                    if not target.is_file() or not any(target.is_relative_to(r) for r in roots):
                        continue
                elif not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if not _ignored(specs, rel, is_dir=False):
                yield rel


def _load_ignore(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    return spec if len(spec) else None


def _ignored(specs: _IgnoreStack, rel: str, is_dir: bool) -> bool:
    # The deepest .gitignore with a matching pattern decides, as in git.
    for prefix, spec in reversed(specs):
        sub = rel[len(prefix) + 1 :] if prefix else rel
        result = spec.check_file(sub + "/" if is_dir else sub)
        if result.include is not None:
            return bool(result.include)
    return False


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over root-relative posix paths.

    ``*`` and ``?`` stay within one path segment, ``**`` spans directories (``**/``
    also matches none), ``[abc]`` and ``{a,b}`` work as in shells. A pattern with
    no ``/`` matches file names at any depth (``*.py``), as in .gitignore and rg;
    a trailing ``/`` means everything under that directory.
    """
    pat = pattern.strip()
    while pat.startswith("./"):
        pat = pat[2:]
    if pat.endswith("/"):
        pat += "**"
    anchored = "/" in pat
    pat = pat.lstrip("/")
    if not pat:
        raise ToolError(f"the glob pattern {pattern!r} is empty")
    body = _translate(pat)
    if not anchored:
        body = "(?:.*/)?" + body
    try:
        return re.compile(rf"\A{body}\Z", re.DOTALL)
    except re.error as e:  # e.g. a reversed range, [z-a]
        raise ToolError(f"invalid glob pattern {pattern!r}: {e.msg}") from None


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            if pat.startswith("**", i) and (i == 0 or pat[i - 1] == "/"):
                if pat.startswith("**/", i):
                    out.append("(?:[^/]*/)*")
                    i += 3
                    continue
                if i + 2 == n:
                    out.append(".*")
                    i += 2
                    continue
            while i < n and pat[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            close = _class_end(pat, i)
            if close < 0:
                out.append(re.escape(c))
            else:
                inner = pat[i + 1 : close]
                negate = inner[:1] in ("!", "^")
                if negate:
                    inner = inner[1:]
                inner = "".join("\\" + ch if ch in "\\^[]" else ch for ch in inner)
                out.append(f"[^/{inner}]" if negate else f"[{inner}]")
                i = close
        elif c == "{":
            close = _brace_end(pat, i)
            if close < 0:
                out.append(re.escape(c))
            else:
                alternatives = _split_alternatives(pat[i + 1 : close])
                out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
                i = close
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pat[i + 1]))
            i += 1
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _class_end(pat: str, start: int) -> int:
    j = start + 1
    if j < len(pat) and pat[j] in "!^":
        j += 1
    if j < len(pat) and pat[j] == "]":
        j += 1  # a ']' first in the class is a literal, as in fnmatch
    return pat.find("]", j)


def _brace_end(pat: str, start: int) -> int:
    depth = 0
    for j in range(start, len(pat)):
        if pat[j] == "{":
            depth += 1
        elif pat[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_alternatives(inner: str) -> list[str]:
    parts, depth, last = [], 0, 0
    for j, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[last:j])
            last = j + 1
    parts.append(inner[last:])
    return parts


# --- commands -------------------------------------------------------------------------

# How long output may keep flowing after the shell exits (a background child holding
# the pipe) before what is left of the process group is killed.
_PIPE_GRACE = 1.0


async def run_shell(
    command: str, cwd: Path, timeout: float = 120.0, max_output: int = 30_000
) -> CommandResult:
    """Run ``command`` under ``/bin/sh -c`` in its own process group.

    The group -- the shell and everything it started -- is killed on timeout, when
    the awaiting task is cancelled, and when children still hold the output pipe
    open after the shell exited; so no command outlives its call unless it
    detached itself on purpose (its own session, output redirected).
    """
    loop = asyncio.get_running_loop()
    capture = _Capture(max_output)
    # A protocol rather than asyncio.subprocess: Process.wait() also waits for the
    # pipes to close, which a background child can hold open for ever.
    transport, protocol = await loop.subprocess_exec(
        lambda: _ShellProtocol(loop, capture),
        "/bin/sh",
        "-c",
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pgid = transport.get_pid()
    timed_out = False
    try:
        done, _ = await asyncio.wait({protocol.exited}, timeout=timeout)
        if not done:
            timed_out = True
            _kill_group(pgid)
            await protocol.exited
        done, _ = await asyncio.wait({protocol.output_closed}, timeout=_PIPE_GRACE)
        if not done:
            _kill_group(pgid)
            # Anything that escaped the group (its own setsid) and still holds the
            # pipe is abandoned here: close() below drops our end.
            await asyncio.wait({protocol.output_closed}, timeout=_PIPE_GRACE)
    except BaseException:
        _kill_group(pgid)
        raise
    finally:
        transport.close()
    output, truncated = capture.render()
    return CommandResult(
        exit_code=None if timed_out else transport.get_returncode(),
        output=output,
        timed_out=timed_out,
        truncated=truncated,
    )


def _kill_group(pgid: int) -> None:
    # The shell leads its group (start_new_session), so its pid is the group id;
    # the kernel does not hand out a pid still in use as a group id.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _ShellProtocol(asyncio.SubprocessProtocol):
    def __init__(self, loop: asyncio.AbstractEventLoop, capture: _Capture) -> None:
        self.capture = capture
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.capture.add(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class _Capture:
    """Keeps the head and tail of a stream in bounded memory however long it runs."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max(max_chars, 2)
        # A character is at most 4 UTF-8 bytes, so this many bytes always decode to
        # at least half the character budget at each end.
        self.keep_bytes = 2 * self.max_chars
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep_bytes * 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
        self.tail += chunk
        if len(self.tail) > 4 * self.keep_bytes:
            del self.tail[: -self.keep_bytes]

    def render(self) -> tuple[str, bool]:
        keep = self.max_chars // 2
        if self.total <= len(self.head):
            text = self.head.decode("utf-8", errors="replace")
            if len(text) <= self.max_chars:
                return text, False
            first, last = text[:keep], text[-keep:]
        else:
            tail = bytes(self.tail[-self.keep_bytes :])
            # Start the tail on a character boundary, not inside a UTF-8 sequence.
            skip = 0
            while skip < 3 and skip < len(tail) and 0x80 <= tail[skip] < 0xC0:
                skip += 1
            first = self.head.decode("utf-8", errors="replace")[:keep]
            last = tail[skip:].decode("utf-8", errors="replace")[-keep:]
        first, last = _cut_at_newline(first, last)
        omitted = self.total - len(first.encode()) - len(last.encode())
        marker = (
            f"\n\n[... output truncated: {omitted:,} of {self.total:,} bytes omitted "
            "from the middle ...]\n\n"
        )
        return first + marker + last, True


def _cut_at_newline(first: str, last: str) -> tuple[str, str]:
    # Whole lines read better than a cut mid-line, when that costs under half the budget.
    end = first.rfind("\n")
    if end >= len(first) // 2:
        first = first[: end + 1]
    start = last.find("\n")
    if 0 <= start < len(last) // 2:
        last = last[start + 1 :]
    return first, last
