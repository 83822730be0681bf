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
- ``fs.writeTextFile``: **writes** of UTF-8 text go to ``fs/write_text_file``
  only, never to the disk first: editors apply it to the buffer visiting the file
  and save (agent-shell, CodeCompanion), and a disk changed under that buffer
  makes Emacs ask "changed on disk; really edit the buffer?". A restore's
  conditional write (``expect``) is checked against the disk just before the
  client is asked; exec bits are set on disk after. A client that refuses or
  fails the write (an error, a hang-up, no answer in :data:`FS_TIMEOUT`) raises
  :class:`~agent_host.session.errors.WriteRefused` with its reason: the tool call
  fails, a restore keeps the file. What landed may differ from what was sent
  (CodeCompanion adds a final newline): the engine reads it back and records that
  (see ``_change_file`` in :mod:`agent_host.session.turn`), and counts such
  normalisation as the agent's (:func:`~agent_host.session.workspace.as_normalised`).
  ``fs/write_text_file`` saves what it is given, so the unsaved text a restore
  would give a buffer cannot go with it: the saved file is restored and the
  buffer reported unreverted. Binary content is written to the disk, and deletes
  too (ACP has no delete; a deleted file's buffer is left to the editor).
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

from acp import Client, RequestError

from ..session.errors import FileTooLarge, WriteRefused
from ..session.limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT, MAX_FILE_BYTES
from ..session.workspace import (
    BUFFER_ENCODING,
    BUFFER_ERRORS,
    CommandResult,
    DelegatingWorkspace,
    DiskWorkspace,
    IfContent,
    as_normalised,
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
        if text is None or as_normalised(saved, text.encode(BUFFER_ENCODING, BUFFER_ERRORS)):
            return None  # the file, as the client shows it (CodeCompanion: CRLF as LF)
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

    # -- writes: the client's, never the disk first

    @property
    def editor_writes(self) -> bool:
        return self._client("write") is not None

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        buffer: str | None = None,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        client = self._client("write")
        try:
            text = None if client is None else data.decode("utf-8")
        except UnicodeDecodeError:
            text = None  # binary: not the client's to write as text
        if client is None or text is None:
            await self.disk.write_bytes(path, data, expect=expect, executable=executable)
            return
        if expect is not None:
            # The condition is the disk's; the editor is asked only if it holds.
            await self.disk.check(path, expect)
        conn, session_id = client
        shown = self.relative(self.resolve(path))
        await self.disk.make_parents(path)  # folders only: no buffer visits them
        sent = self.port.newline.to_send(text)
        try:
            await asyncio.wait_for(
                conn.write_text_file(
                    session_id=session_id, path=str(self.resolve(path)), content=sent
                ),
                FS_TIMEOUT,
            )
        except CLIENT_FAILURES as exc:
            raise WriteRefused(shown, _reason(exc)) from None
        try:
            landed = await self.disk.read_bytes(path, limit=len(data) + 1)
        except FileTooLarge:
            landed = None  # not the agent's text plus a newline: nothing to learn
        self.port.newline.learn(data, sent, landed)
        if executable is not None:
            await self.disk.set_executable(path, executable)
        if buffer is not None and buffer != text:
            # fs/write_text_file is "write this file": the editor saves what it is
            # given, so unsaved text a restore would put back cannot go with it.
            self.unsynced(
                shown, "ACP cannot give a buffer unsaved text; the saved file was restored"
            )

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
            conn,
            session_id,
            command,
            cwd or self.roots[0],
            timeout,
            max_output,
            shown,
            roots=self.roots,
            sandbox=self.disk.sandbox,
        )


class FinalNewline:
    """Whether this client's ``fs/write_text_file`` adds a final newline, learned
    from what its writes leave on disk, so later writes land exactly.

    CodeCompanion.nvim splits the content on "\\n" into buffer lines and saves them
    each with a newline: "a\\n" lands as "a\\n\\n" -- a rewind's write, then an
    undo's, would each grow the file by a line. Once a write is seen to land with
    one more newline, text that ends with one is sent without it; a write that then
    lands short unlearns it. (The restore's normalisation rule,
    :func:`~agent_host.session.workspace.as_normalised`, keeps the first write,
    before anything is learned, from counting as a user's edit.)
    """

    def __init__(self) -> None:
        self.added = False

    def to_send(self, text: str) -> str:
        return text[:-1] if self.added and text.endswith("\n") else text

    def learn(self, data: bytes, sent: str, landed: bytes | None) -> None:
        if landed is None or landed == data or not data.endswith(b"\n"):
            return
        if not self.added and landed == data + b"\n":
            log.info("the client adds a final newline to what it writes: sending one less")
            self.added = True
        elif self.added and landed == sent.encode("utf-8"):
            self.added = False


def _reason(exc: BaseException) -> str:
    """What the client said (or why it said nothing), for the model and the user."""
    if isinstance(exc, RequestError):
        data = exc.data.get("details") if isinstance(exc.data, dict) else exc.data
        more = f": {data}" if isinstance(data, str) and data and data != str(exc) else ""
        return f"{exc}{more} (error {exc.code})"
    if isinstance(exc, TimeoutError):
        return f"no answer to fs/write_text_file within {FS_TIMEOUT:g} s"
    if isinstance(exc, ConnectionError):
        return f"the editor hung up ({exc})" if str(exc) else "the editor hung up"
    return f"its answer was not valid ({exc})"
