"""ClientWorkspace: the agent's files and commands through the ACP client, where it
offers them; the LSP front end's EditorWorkspace is its twin.

A :class:`~agent_host.session.workspace.Workspace` over a DiskWorkspace that asks
the client at call time, by its ``initialize`` capabilities (the service makes
the server folder's workspace before the client has said what it offers):

- ``fs.readTextFile``: **reads** of text files go through ``fs/read_text_file``,
  so the agent sees the editor's unsaved text. Binary files, files not on disk
  (a client may answer "" for those, as if they existed empty) and a client that
  errs or stalls are read from the disk. ``buffer_text`` is the client's text when
  it differs from the disk: the engine's snapshots keep it as an unsaved buffer.
- ``fs.writeTextFile``: **writes** go to the disk first (atomically, with the
  conditional writes a restore makes: the disk stays the truth for snapshots and
  tools), then to ``fs/write_text_file`` so the editor's buffer follows; a
  restore sends the unsaved text the buffer had. ACP has no delete, so a deleted
  file's buffer is left to the editor.
- ``terminal``: **commands** run in the client's terminal (:mod:`.terminal`).

Every client request needs the session it is for: each session has a workspace
of its own (``AcpPort.workspace(roots, session_id)``) that names it. The folder's
workspace (no session), or a client that offers nothing, is DiskWorkspace's,
unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from acp import Client

from ..session.errors import FileTooLarge
from ..session.limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT, MAX_FILE_BYTES
from ..session.workspace import (
    BUFFER_ENCODING,
    BUFFER_ERRORS,
    CommandResult,
    DelegatingWorkspace,
    DiskWorkspace,
    IfContent,
)
from . import terminal
from .errors import CLIENT_FAILURES

if TYPE_CHECKING:
    from .port import AcpPort

log = logging.getLogger(__name__)

FS_TIMEOUT = 10.0
"""Seconds to wait for the client's answer to fs/read_text_file or fs/write_text_file."""


class ClientWorkspace(DelegatingWorkspace):
    def __init__(self, disk: DiskWorkspace, port: AcpPort, session_id: str | None = None) -> None:
        super().__init__(disk)
        self.port = port
        self.session_id = session_id
        """The session whose client requests these are (None: the disk's only)."""

    def __repr__(self) -> str:
        return f"ClientWorkspace({[str(r) for r in self.roots]}, {self.session_id!r})"

    def _client(self, capability: str) -> tuple[Client, str] | None:
        """The connection and session to ask, if the client offers ``capability``
        (``read``, ``write`` or ``terminal``) and this is a session's workspace."""
        caps, conn, session_id = self.port.client_capabilities, self.port.conn, self.session_id
        if caps is None or conn is None or session_id is None:
            return None
        if capability == "terminal":
            offered = bool(caps.terminal)
        else:
            fs = caps.fs
            offered = fs is not None and bool(
                fs.read_text_file if capability == "read" else fs.write_text_file
            )
        return (conn, session_id) if offered else None

    # -- reads

    async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        saved = await self.disk.read_bytes(path, limit=limit)
        text = await self._client_text(path, saved)
        if text is None:
            return saved
        data = text.encode(BUFFER_ENCODING, BUFFER_ERRORS)
        if limit is not None and len(data) > limit:
            raise FileTooLarge(self.relative(self.resolve(path)), len(data), limit)
        return data

    async def buffer_text(self, path: str) -> str | None:
        try:
            # A file past the snapshot limit is never read whole, nor asked of the client.
            saved = await self.disk.read_bytes(path, limit=MAX_FILE_BYTES)
        except FileTooLarge:
            return None
        text = await self._client_text(path, saved)
        if text is None or text.encode(BUFFER_ENCODING, BUFFER_ERRORS) == saved:
            return None
        return text

    async def _client_text(self, path: str, saved: bytes | None) -> str | None:
        """The file's text as the client shows it; None: read the disk instead."""
        client = self._client("read")
        if client is None or saved is None:
            return None
        try:
            saved.decode("utf-8")
        except UnicodeDecodeError:
            return None  # binary: not the client's to show as text
        conn, session_id = client
        try:
            answer = await asyncio.wait_for(
                conn.read_text_file(session_id=session_id, path=str(self.resolve(path))),
                FS_TIMEOUT,
            )
        except CLIENT_FAILURES as exc:
            log.warning("fs/read_text_file %s failed (%s): read from disk", path, exc)
            return None
        return answer.content

    # -- writes: the disk first, then the client

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        buffer: str | None = None,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        await self.disk.write_bytes(path, data, expect=expect, executable=executable)
        client = self._client("write")
        if client is None:
            return
        text = buffer
        if text is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                return  # binary: no buffer to bring along
        conn, session_id = client
        try:
            await asyncio.wait_for(
                conn.write_text_file(
                    session_id=session_id, path=str(self.resolve(path)), content=text
                ),
                FS_TIMEOUT,
            )
        except CLIENT_FAILURES as exc:
            # The disk has it; only the editor's view lags, until it reloads the file.
            log.warning("fs/write_text_file %s failed (%s): written to disk only", path, exc)

    async def delete(
        self, path: str, *, buffer: str | None = None, expect: IfContent | None = None
    ) -> None:
        # ACP has no fs delete, and fs/write_text_file would create the file again;
        # so an unsaved buffer of a file that was not on disk is not put back.
        await self.disk.delete(path, expect=expect)
        if buffer is not None:
            log.info("%s deleted; its unsaved buffer text cannot be given back over ACP", path)

    # -- commands

    async def run_command(
        self,
        command: str,
        timeout: float = COMMAND_DEFAULT_TIMEOUT,
        max_output: int = COMMAND_MAX_OUTPUT,
        *,
        cwd: Path | None = None,
    ) -> CommandResult:
        client = self._client("terminal")
        if client is None:
            return await self.disk.run_command(command, timeout, max_output, cwd=cwd)
        conn, session_id = client

        async def shown(terminal_id: str) -> None:
            await self.port.terminal_started(session_id, terminal_id)

        return await terminal.run(
            conn, session_id, command, cwd or self.roots[0], timeout, max_output, shown
        )
