"""EditorWorkspace: the agent's files as the editor shows them.

A :class:`~agent_host.session.workspace.Workspace` over a
:class:`~agent_host.session.workspace.DiskWorkspace` that knows the editor's open
buffers (pygls keeps them in ``server.workspace`` from didOpen/didChange/didClose):

- **Reads** of a file open in the editor return the buffer's text, unsaved edits
  included (UTF-8), so the agent works on what the user sees.
- **Writes** go to the disk first (atomically; the disk stays the truth for tools
  and for the session's snapshots), then every open buffer of the file is brought
  to exactly the new content with ``workspace/applyEdit``: one labelled,
  unversioned TextEdit replacing the whole document, so the editor shows the
  change and its undo takes it back.

  This is not ACP's double write (issue 23: agent-shell asking "changed on disk;
  really edit the buffer?"). ACP's ``fs/write_text_file`` asks the editor to
  write the file, and it does, so ACP's workspace writes through it alone
  (``acp/client_files.py``). LSP has no such request: ``workspace/applyEdit``
  changes a buffer and never saves it, so without the disk write the file the
  tools, commands and snapshots read would not change. The editors this dialect
  serves expect the file written first: the VS Code extension
  (``editors/vscode/src/ui/agentEdits.ts``) applies the edit and reverts the
  document from the disk, and the Neovim plugin (``editors/neovim/lua/
  agent_host/edits.lua``) reloads the buffer from the file before the edit, so
  neither shows a buffer differing from a newer file, nor asks. A generic LSP
  client applies the edit to a buffer the file has caught up with.
- **Each edit is checked.** The client's answer alone is not enough (Neovim answers
  ``applied: true`` when it skips an edit it thinks stale), so the buffer's synced
  text must equal what was sent once its didChange arrives (waited for up to
  :data:`SYNC_WAIT` seconds). A refused or unconfirmed edit is sent once more and
  otherwise reported: during a restore or undo it is collected
  (:func:`~agent_host.session.workspace.unsynced_buffers`) into the result's
  ``unrevertedBuffers``; elsewhere (a turn's tool) it is logged and shown to the
  user with ``window/showMessage``.
- **Deletes** remove the file and leave an open buffer as it is, reported the same
  way: emptying it would show an empty file that does not exist, and a DeleteFile
  resource operation would close the user's buffer and lose its unsaved text and
  undo history. Until the user edits it again, such a buffer no longer counts as
  the file's content (a read finds the file absent).
- **Restore** writes the file and gives its open buffer the unsaved text it had
  (``write_bytes(path, data, buffer=text)``) in one edit; the buffer stays dirty,
  which is right since it differs from the disk.

Only ``file:`` buffers of files inside the workspace roots count; the server uses
this class only when the client has the ``workspace.applyEdit`` capability (a
client without it gets a plain DiskWorkspace: disk reads, disk writes). Each
session gets its own view (:meth:`EditorWorkspace.for_session`), so what its
restore could not bring back is its own; the views of one folder share what the
buffers are (which were left stale, one edit at a time).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from ..session.errors import FileTooLarge
from ..session.workspace import (
    BUFFER_ENCODING,
    BUFFER_ERRORS,
    DelegatingWorkspace,
    DiskWorkspace,
    IfContent,
)

log = logging.getLogger(__name__)

SYNC_WAIT = 1.0
"""Seconds to wait for the didChange that confirms an applied edit."""
SETTLE = 0.1
"""Once the version moved but the text differs: seconds more for further didChanges."""
APPLY_TIMEOUT = 10.0
"""Seconds to wait for the client's answer to workspace/applyEdit."""
POLL = 0.01

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class EditorWorkspace(DelegatingWorkspace):
    """A Workspace whose reads see open buffers and whose writes reach them."""

    def __init__(
        self, server: LanguageServer, disk: DiskWorkspace, *, shares: EditorWorkspace | None = None
    ) -> None:
        super().__init__(disk)
        self.server = server
        self._stale: dict[str, int | None] = shares._stale if shares else {}
        """Buffers left open on a file we deleted: uri -> their version then."""
        self._lock: asyncio.Lock = shares._lock if shares else asyncio.Lock()

    def for_session(self) -> EditorWorkspace:
        """A view of the same folder and buffers for one session: what its restore
        or undo could not bring back is collected for it alone."""
        return EditorWorkspace(self.server, self.disk, shares=self)

    # -- the Workspace protocol, where buffers take part

    async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        real = self.resolve(path)
        docs = self._buffers(real)
        if docs:
            data = docs[0].source.encode(BUFFER_ENCODING, BUFFER_ERRORS)
            if limit is not None and len(data) > limit:
                raise FileTooLarge(self.relative(real), len(data), limit)
            return data
        return await self.disk.read_bytes(path, limit=limit)

    async def buffer_text(self, path: str) -> str | None:
        docs = self._buffers(self.resolve(path))
        return docs[0].source if docs else None

    async def write_bytes(
        self,
        path: str,
        data: bytes,
        *,
        buffer: str | None = None,
        expect: IfContent | None = None,
        executable: bool | None = None,
    ) -> None:
        real = self.resolve(path)
        await self.disk.write_bytes(path, data, expect=expect, executable=executable)
        docs = self._buffers(real, stale_too=True)
        if not docs:
            return
        shown = self.relative(real)
        text = buffer
        if text is None:
            try:
                text = data.decode(BUFFER_ENCODING)
            except UnicodeDecodeError:
                self._report(shown, "the new content is not UTF-8 text; the buffer was left")
                return
        await self._sync(shown, docs, text, buffer is not None)

    async def delete(
        self, path: str, *, buffer: str | None = None, expect: IfContent | None = None
    ) -> None:
        real = self.resolve(path)
        await self.disk.delete(path, expect=expect)
        docs = self._buffers(real, stale_too=True)
        if not docs:
            return
        shown = self.relative(real)
        if buffer is not None:  # a restore: the buffer of a file that was never saved
            await self._sync(shown, docs, buffer, True)
            return
        for doc in docs:
            self._stale[doc.uri] = doc.version
        self._report(shown, "the file was deleted; its open buffer was left as it was")

    # -- buffers

    def _documents(self) -> dict[str, TextDocument]:
        return self.server.workspace.text_documents

    def _buffers(self, real: Path, stale_too: bool = False) -> list[TextDocument]:
        """The open buffers of the file at ``real`` (symlinks followed), oldest first."""
        documents = self._documents()
        open_uris = {doc.uri for doc in documents.values()}
        for uri in [u for u in self._stale if u not in open_uris]:
            del self._stale[uri]  # closed since
        found = []
        for doc in list(documents.values()):
            fs_path = to_fs_path(doc.uri)
            if not fs_path or Path(os.path.realpath(fs_path)) != real:
                continue
            if doc.uri in self._stale:
                if self._stale[doc.uri] != doc.version:
                    del self._stale[doc.uri]  # edited since: the user's buffer again
                elif not stale_too:
                    continue
            found.append(doc)
        return found

    def _document(self, uri: str) -> TextDocument | None:
        for doc in self._documents().values():
            if doc.uri == uri:
                return doc
        return None

    async def _sync(self, shown: str, docs: list[TextDocument], text: str, restoring: bool) -> None:
        restoring = restoring or self.collecting
        label = f"agent-host: {'restore' if restoring else 'write'} {shown}"
        failures = []
        async with self._lock:
            for doc in docs:
                reason = await self._sync_one(doc.uri, text, label)
                if reason is None:
                    self._stale.pop(doc.uri, None)
                else:
                    failures.append(reason)
        if failures:
            self._report(shown, failures[0])
        else:
            self.synced(shown)

    async def _sync_one(self, uri: str, text: str, label: str) -> str | None:
        """Bring one buffer to ``text``: None when done, else why not (after one retry)."""
        reason = None
        for _ in range(2):
            doc = self._document(uri)
            if doc is None or doc.source == text:
                return None  # closed meanwhile (nothing to bring back), or already there
            version = doc.version
            edit = lsp.WorkspaceEdit(
                changes={doc.uri: [lsp.TextEdit(range=self._whole(doc.source), new_text=text)]}
            )
            params = lsp.ApplyWorkspaceEditParams(edit=edit, label=label)
            try:
                answer: Any = await asyncio.wait_for(
                    self.server.workspace_apply_edit_async(params), APPLY_TIMEOUT
                )
            except TimeoutError:
                reason = f"the editor did not answer workspace/applyEdit within {APPLY_TIMEOUT}s"
                continue
            except Exception as exc:  # an error response, a lost connection
                reason = f"workspace/applyEdit failed: {exc}"
                continue
            if not _applied(answer):
                why = _failure_reason(answer)
                reason = "the editor refused the edit" + (f": {why}" if why else "")
                continue
            if await self._synced(uri, text, version):
                return None
            reason = "the editor answered applied but its buffer does not have the new text"
        log.warning("buffer %s not synced: %s", uri, reason)
        return reason

    async def _synced(self, uri: str, text: str, version: int | None) -> bool:
        """Whether the buffer's synced text becomes ``text`` soon (its didChange arrives)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SYNC_WAIT
        moved_at = None
        while True:
            doc = self._document(uri)
            if doc is None:
                return True  # closed: nothing left to differ
            if doc.source == text:
                return True
            now = loop.time()
            if doc.version != version and moved_at is None:
                moved_at = now
            if now >= deadline or (moved_at is not None and now - moved_at >= SETTLE):
                return False
            await asyncio.sleep(POLL)

    def _whole(self, source: str) -> lsp.Range:
        """The range of the whole document, in the negotiated position encoding."""
        breaks = _LINE_BREAK.findall(source)
        last = _LINE_BREAK.split(source)[-1]
        units = self.server.workspace.position_codec.client_num_units(last)
        return lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(len(breaks), units))

    # -- reporting

    def _report(self, shown: str, reason: str) -> None:
        if self.unsynced(shown, reason):
            return  # a restore's or undo's: its result lists it
        log.warning("the open buffer of %s differs from the disk: %s", shown, reason)
        try:
            self.server.window_show_message(
                lsp.ShowMessageParams(
                    lsp.MessageType.Warning,
                    f"agent-host: the open buffer of {shown} no longer matches the file "
                    f"on disk ({reason})",
                )
            )
        except Exception:  # never fail a tool over a notification
            log.debug("could not show a message", exc_info=True)


def _applied(answer: Any) -> bool:
    if isinstance(answer, dict):
        return bool(answer.get("applied"))
    return bool(getattr(answer, "applied", False))


def _failure_reason(answer: Any) -> str | None:
    if isinstance(answer, dict):
        return answer.get("failureReason")
    return getattr(answer, "failure_reason", None)
