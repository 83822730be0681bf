"""The :class:`Workspace` protocol tools and restore go through, and :class:`CommandResult`.

Tools read, write and run commands only through a :class:`Workspace`, so the same
tools work on plain folders (:class:`~.disk.DiskWorkspace`, for the CLI and CI) and
inside an editor, where an ``EditorWorkspace`` sends writes through LSP
``workspace/applyEdit`` so they land in open buffers. The protocol is kept small
and async for that reason.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

import attrs

from ..limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT


@attrs.frozen
class IfContent:
    """The condition of a conditional write: the file's content must be the blob
    ``blob`` (its sha256; None: the file must not exist), else FileChanged."""

    blob: str | None


@attrs.define
class CommandResult:
    exit_code: int | None
    """The shell's exit status; negative for a signal; None when it timed out."""
    output: str
    """stdout and stderr as they interleaved, cut in the middle if too long."""
    timed_out: bool = False
    truncated: bool = False
    detached: list[int] = attrs.field(factory=list)
    """Pids of processes the command started that made a session of their own
    (``setsid``) and so were left running when it ended."""
    sandboxed: bool = False
    """Whether it ran confined (:mod:`~agent_host.session.sandbox`)."""
    sandbox_denial: str | None = None
    """Why the sandbox stopped it, when its failure says so (None: nothing does)."""


class Workspace(Protocol):
    roots: list[Path]
    """Absolute, symlink-free folders; the first one is where relative paths start."""

    def resolve(self, path: str) -> Path:
        """The real path of ``path``; PathOutsideWorkspace if it is outside the roots."""
        ...

    def relative(self, path: Path) -> str:
        """The display path events and tool output use for ``path``."""
        ...

    async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        """The file's content, None if it does not exist; ToolError for a directory.

        What the user sees: in an editor, an open buffer's text, unsaved edits included.
        ``limit``: FileTooLarge, having read nothing, for content over that many bytes.
        """
        ...

    async def read_disk(self, path: str, *, limit: int | None = None) -> bytes | None:
        """The file's content as saved on disk, whatever an editor buffer shows."""
        ...

    async def read_range(self, path: str, start: int, size: int) -> bytes | None:
        """Up to ``size`` bytes of the file on disk from byte ``start`` (fewer at its
        end), None if it does not exist: a file too large to hold, a piece at a time."""
        ...

    async def buffer_text(self, path: str) -> str | None:
        """The text of an open editor buffer of the file, None if none is open."""
        ...

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        buffer: str | None = None,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        """Replace the file's content atomically, creating parent directories.

        Open editor buffers of the file are brought to the new content -- or to
        ``buffer`` when given: the unsaved text a restore puts back. With
        ``expect``, only if the file on disk is as expected (checked as it is
        replaced), else FileChanged: a restore never writes over what someone
        else changed since it looked. ``executable`` sets or clears the exec bits
        (None: a replaced file keeps its mode, a new one gets the default).
        """
        ...

    async def delete(
        self, path: str, *, buffer: str | None = None, expect: IfContent | None = None
    ) -> None:
        """Remove the file; a file that does not exist is fine. ``buffer`` and
        ``expect``: as for :meth:`write_bytes` (``buffer``: an unsaved buffer of a
        file that was not on disk)."""
        ...

    def batch_writes(self) -> AbstractAsyncContextManager[None]:
        """A block whose writes and deletes are durable once it exits (not each as
        it returns): the folders they changed are synced once, at the end."""
        ...

    async def discard_partial_writes(self, path: str) -> None:
        """Remove what a write of ``path`` cut short by a crash left beside it (its
        temp file), so a restore finished after a crash leaves no stray files."""
        ...

    async def list_files(self, pattern: str | None = None, limit: int = 1000) -> list[str]:
        """Up to ``limit`` display paths, sorted, minus what .gitignore excludes."""
        ...

    async def run_command(
        self,
        command: str,
        timeout: float = COMMAND_DEFAULT_TIMEOUT,
        max_output: int = COMMAND_MAX_OUTPUT,
        *,
        cwd: Path | None = None,
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` in ``cwd``, one of the roots (None:
        the first)."""
        ...


BUFFER_ENCODING = "utf-8"
BUFFER_ERRORS = "surrogatepass"
"""How buffer text becomes bytes (for reads and blobs) and back, losslessly."""


def unsaved_bytes(buffer: str | None, saved: bytes | None) -> bytes | None:
    """An open buffer's text as bytes when it differs from the saved file, else None."""
    if buffer is None:
        return None
    data = buffer.encode(BUFFER_ENCODING, BUFFER_ERRORS)
    return None if data == saved else data


def as_normalised(ours: bytes | None, found: bytes | None) -> bool:
    """Whether ``found`` is ``ours`` as an editor normalised it: the same text but
    for CRLF against LF line ends and one final newline added or removed.

    Editors that write through their buffers do this on their own:
    CodeCompanion.nvim splits ``fs/write_text_file``'s content on "\\n" into buffer
    lines and saves, so "a\\n" lands as "a\\n\\n", and its reads give CRLF files
    back with LF; Vim's and Emacs's end-of-line and final-newline settings change
    the same two things on save. Such content is still what the agent (or a
    restore) wrote, not a user's edit: a restore's and an undo's conflict checks
    count it as theirs, and an ACP client's read that differs from the disk only
    so is no unsaved buffer. Any other difference -- a changed line, an added blank line in the
    middle -- is a real edit. Both None (no file) is the same; one None is not.
    """
    if ours is None or found is None:
        return ours is found
    if ours == found:
        return True
    a, b = ours.replace(b"\r\n", b"\n"), found.replace(b"\r\n", b"\n")
    return a == b or a + b"\n" == b or a == b + b"\n"
