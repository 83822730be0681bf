"""EditorWorkspace: reads see open buffers, writes reach them, restore brings them back.

The end-to-end tests drive a real ``agent-host serve`` with pytest-lsp's client
playing an editor: it keeps an in-memory copy of each open document, and answers
``workspace/applyEdit`` by applying the edit to that copy and sending didChange --
or, depending on ``Editor.mode``, by refusing (``applied: false``) or by answering
``applied: true`` while changing nothing, as Neovim does with an edit it thinks
stale. The engine-level tests at the end run ``AgentHost`` on a fake editor.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from agent_host.session import events as ev
from agent_host.session.checkpoints import buffers_to_restore, files_to_restore
from agent_host.session.host import AgentHost
from agent_host.session.store import collect_garbage, open_store
from agent_host.session.workspace import DiskWorkspace

from .conftest import write_script

ORIGINAL = "print('a')\n"
UNSAVED = "print('a')\nprint('unsaved \U0001f642')\n"  # an emoji: two UTF-16 units
AGENT = "print('a')\nprint('agent')\n"

EDIT_A = [
    {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
    {
        "text": "Editing.",
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {
                    "path": "a.py",
                    "old_string": "print('unsaved \U0001f642')",
                    "new_string": "print('agent')",
                },
            }
        ],
    },
    {"text": "Done."},
]


# -- the editor the client plays


def _offset(text: str, position: lsp.Position) -> int:
    """A UTF-16 LSP position as an offset into ``text`` (lines end at \\r\\n, \\r or \\n)."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    start = starts[min(position.line, len(starts) - 1)]
    end = len(text) if position.line + 1 >= len(starts) else starts[position.line + 1]
    units = 0
    for offset in range(start, end):
        if units >= position.character or text[offset] in "\r\n":
            return offset
        units += 2 if ord(text[offset]) > 0xFFFF else 1
    return end


class Buffer:
    def __init__(self, editor: Editor, path: Path) -> None:
        self.editor = editor
        self.uri = path.as_uri()
        self.text = path.read_text() if path.exists() else ""
        self.version = 1
        editor.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(self.uri, "python", self.version, self.text)
            )
        )

    def replace(self, start: int, end: int, new_text: str, edit_range: lsp.Range) -> None:
        self.text = self.text[:start] + new_text + self.text[end:]
        self.version += 1
        self.editor.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(self.version, self.uri),
                [lsp.TextDocumentContentChangePartial(range=edit_range, text=new_text)],
            )
        )

    def type(self, text: str) -> None:
        """The user edits the whole buffer (without saving)."""
        lines = re.split(r"\r\n|\r|\n", self.text)
        end = lsp.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)
        self.replace(0, len(self.text), text, lsp.Range(lsp.Position(0, 0), end))


class Editor:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.mode = "apply"
        self.buffers: dict[str, Buffer] = {}
        self.requests: list[lsp.ApplyWorkspaceEditParams] = []

        @client.feature("session/event")
        def on_event(params) -> None:
            return None

        @client.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            self.requests.append(params)
            if self.mode == "refuse":
                return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason="read-only")
            if self.mode == "ignore":
                return lsp.ApplyWorkspaceEditResult(applied=True)
            for uri, edits in (params.edit.changes or {}).items():
                buffer = self.buffers[uri]
                for edit in sorted(
                    edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
                ):
                    start = _offset(buffer.text, edit.range.start)
                    end = _offset(buffer.text, edit.range.end)
                    buffer.replace(start, end, edit.new_text, edit.range)
            return lsp.ApplyWorkspaceEditResult(applied=True)

    def open(self, name: str) -> Buffer:
        buffer = Buffer(self, self.root / name)
        self.buffers[buffer.uri] = buffer
        return buffer


@pytest.fixture
def apply_edit():
    """Whether the client has the workspace.applyEdit capability; tests parametrize it."""
    return True


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "agent_host", "serve"]),
)
async def server(lsp_client: LanguageClient, tmp_path, workspace, steps, apply_edit):
    """A running server (the fixture's value is the client); ``editor`` wraps it."""
    model = write_script(tmp_path / "script.json", steps)
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(
                workspace=lsp.WorkspaceClientCapabilities(apply_edit=apply_edit),
            ),
            root_uri=workspace.as_uri(),
            initialization_options={
                "store": str(tmp_path / "store"),
                "model": model,
                "approval": "auto",
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def editor(server: LanguageClient, workspace) -> Editor:
    return Editor(server, workspace)


async def call(editor: Editor, method: str, params: dict):
    return await editor.client.protocol.send_request_async(method, params)


async def tool_outputs(editor: Editor, session_id: str) -> list[str]:
    history = await call(editor, "session/history", {"sessionId": session_id})
    return [m.content for m in history.messages if m.role == "tool"]


# -- end to end


@pytest.mark.parametrize("steps", [EDIT_A])
async def test_the_agent_edits_what_the_user_sees_and_restore_brings_back_both(
    editor, workspace, steps
):
    a = editor.open("a.py")
    a.type(UNSAVED)

    sent = await call(editor, "session/send", {"prompt": "fix a.py"})

    outputs = await tool_outputs(editor, sent.sessionId)
    assert "unsaved \U0001f642" in outputs[0]  # the read saw the unsaved buffer
    assert (workspace / "a.py").read_text() == AGENT
    assert a.text == AGENT
    assert [r.label for r in editor.requests] == ["agent-host: write a.py"]
    (change,) = editor.requests[0].edit.changes[a.uri]
    assert change.range == lsp.Range(lsp.Position(0, 0), lsp.Position(2, 0))  # the whole text

    restored = await call(
        editor, "session/restore", {"sessionId": sent.sessionId, "seq": sent.checkpoint}
    )
    assert restored.restoredFiles == ["a.py"]
    assert restored.unrevertedBuffers == []
    assert (workspace / "a.py").read_bytes() == ORIGINAL.encode()
    assert a.text == UNSAVED  # unsaved again: dirty, as it was
    assert editor.requests[-1].label == "agent-host: restore a.py"

    undone = await call(editor, "session/undoRestore", {"sessionId": sent.sessionId})
    assert undone.restoredFiles == ["a.py"]
    assert undone.unrevertedBuffers == []
    assert (workspace / "a.py").read_text() == AGENT
    assert a.text == AGENT


@pytest.mark.parametrize("steps", [EDIT_A])
@pytest.mark.parametrize("mode", ["refuse", "ignore"])
async def test_a_buffer_the_editor_does_not_bring_back_is_reported(editor, workspace, steps, mode):
    a = editor.open("a.py")
    a.type(UNSAVED)
    sent = await call(editor, "session/send", {"prompt": "fix a.py"})
    assert a.text == AGENT

    editor.mode = mode
    before = len(editor.requests)
    restored = await call(
        editor, "session/restore", {"sessionId": sent.sessionId, "seq": sent.checkpoint}
    )
    assert restored.unrevertedBuffers == ["a.py"]
    assert restored.restoredFiles == ["a.py"]
    assert (workspace / "a.py").read_bytes() == ORIGINAL.encode()  # the disk is restored
    assert a.text == AGENT
    # One edit (the file back on disk, its buffer back to the unsaved text), tried twice.
    assert len(editor.requests) - before == 2

    editor.mode = "apply"
    undone = await call(editor, "session/undoRestore", {"sessionId": sent.sessionId})
    assert undone.unrevertedBuffers == []
    assert (workspace / "a.py").read_text() == AGENT
    assert a.text == AGENT


@pytest.mark.parametrize("steps", [EDIT_A])
async def test_an_edit_refused_during_a_turn_is_shown_to_the_user(editor, workspace, steps):
    a = editor.open("a.py")
    a.type(UNSAVED)
    editor.mode = "refuse"

    await call(editor, "session/send", {"prompt": "fix a.py"})

    assert (workspace / "a.py").read_text() == AGENT
    assert a.text == UNSAVED
    assert len(editor.requests) == 2  # retried once
    (shown,) = [m for m in editor.client.messages if "a.py" in m.message]
    assert shown.type == lsp.MessageType.Warning
    assert "read-only" in shown.message


@pytest.mark.parametrize("apply_edit", [False])
@pytest.mark.parametrize(
    "steps",
    [
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.py", "content": AGENT}}
                ]
            },
            {"text": "Done."},
        ]
    ],
)
async def test_a_client_without_apply_edit_gets_the_disk_only(editor, workspace, steps, apply_edit):
    a = editor.open("a.py")
    a.type(UNSAVED)

    sent = await call(editor, "session/send", {"prompt": "fix a.py"})

    outputs = await tool_outputs(editor, sent.sessionId)
    assert "unsaved" not in outputs[0]  # the agent read the disk
    assert (workspace / "a.py").read_text() == AGENT
    restored = await call(
        editor, "session/restore", {"sessionId": sent.sessionId, "seq": sent.checkpoint}
    )
    assert restored.unrevertedBuffers == []
    assert (workspace / "a.py").read_text() == ORIGINAL
    assert editor.requests == []
    assert a.text == UNSAVED


@pytest.mark.parametrize(
    "steps",
    [
        [
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "a.py"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
            {"text": "Deleted."},
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "b.py", "content": "new\n"}}
                ]
            },
            {"text": "Created."},
        ]
    ],
)
async def test_a_deleted_file_leaves_its_buffer_open_and_says_so(editor, workspace, steps):
    a = editor.open("a.py")
    a.type(UNSAVED)

    first = await call(editor, "session/send", {"prompt": "delete a.py"})

    assert not (workspace / "a.py").exists()
    assert a.text == UNSAVED and editor.requests == []  # the buffer is left as it was
    assert any("a.py" in m.message for m in editor.client.messages)
    outputs = await tool_outputs(editor, first.sessionId)
    assert "does not exist" in outputs[1]  # the left-over buffer is not the file

    second = await call(
        editor, "session/send", {"sessionId": first.sessionId, "prompt": "create b.py"}
    )
    b = editor.open("b.py")
    assert b.text == "new\n"

    # Back before the first turn: a.py on disk as saved, its buffer as it was (it still is,
    # so nothing is sent); b.py did not exist, so it is deleted and its buffer reported.
    sent_before = len(editor.requests)
    restored = await call(
        editor, "session/restore", {"sessionId": first.sessionId, "seq": first.checkpoint}
    )
    assert sorted(restored.restoredFiles) == ["a.py", "b.py"]
    assert restored.unrevertedBuffers == ["b.py"]
    assert (workspace / "a.py").read_text() == ORIGINAL
    assert not (workspace / "b.py").exists()
    assert a.text == UNSAVED and b.text == "new\n"
    assert len(editor.requests) == sent_before
    assert second.checkpoint > first.checkpoint


# -- the engine on a fake editor


class FakeEditor(DiskWorkspace):
    """Open buffers by display path; writes reach them, as EditorWorkspace's do."""

    def __init__(self, root: Path) -> None:
        super().__init__([root])
        self.buffers: dict[str, str] = {}

    def _key(self, path: str) -> str:
        return self.relative(self.resolve(path))

    async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        key = self._key(path)
        if key in self.buffers:
            return self.buffers[key].encode()
        return await super().read_bytes(path, limit=limit)

    async def read_disk(self, path: str, *, limit: int | None = None) -> bytes | None:
        return await super().read_bytes(path, limit=limit)

    async def buffer_text(self, path: str) -> str | None:
        return self.buffers.get(self._key(path))

    async def write_bytes(self, path: str, data: bytes, *, buffer=None, **disk) -> None:
        await super().write_bytes(path, data, **disk)
        if self._key(path) in self.buffers:
            self.buffers[self._key(path)] = data.decode() if buffer is None else buffer

    async def delete(self, path: str, *, buffer=None, **disk) -> None:
        await super().delete(path, **disk)
        if self._key(path) in self.buffers and buffer is not None:
            self.buffers[self._key(path)] = buffer


def write_a(content: str) -> dict:
    return {
        "tool_calls": [{"name": "write_file", "arguments": {"path": "a.py", "content": content}}]
    }


@pytest.fixture
def fake(tmp_path, workspace):
    editor = FakeEditor(workspace)
    script = write_script(
        tmp_path / "engine.json",
        [write_a("one\n"), {"text": "1"}, write_a("two\n"), {"text": "2"}],
    )
    host = AgentHost(store="memory:", model=script, workspace=editor, auto_compact=None)
    return host, editor


async def test_snapshots_keep_the_disk_and_the_unsaved_buffer(fake, workspace):
    host, editor = fake
    editor.buffers["a.py"] = "typed\n"
    first = await host.send("one")
    events = (await host._state(first.session_id)).events
    (snapshot,) = [e for e in events if type(e) is ev.FileSnapshot]
    assert await host.store.blobs.get(snapshot.before) == ORIGINAL.encode()
    assert await host.store.blobs.get(snapshot.buffer_before) == b"typed\n"
    assert files_to_restore(events, first.checkpoint) == {"a.py": snapshot.before}
    assert buffers_to_restore(events, first.checkpoint) == {"a.py": snapshot.buffer_before}

    # A buffer that matches the disk is not kept.
    second = await host.send("two", session_id=first.session_id)
    events = (await host._state(first.session_id)).events
    later = [e for e in events if type(e) is ev.FileSnapshot and e.seq > second.checkpoint]
    assert [e.buffer_before for e in later] == [None]

    # Restoring past both turns: disk as saved, buffer as typed; undo: both at "two".
    await host.restore(first.session_id, first.checkpoint)
    assert (workspace / "a.py").read_text() == ORIGINAL
    assert editor.buffers["a.py"] == "typed\n"
    await host.undo_restore(first.session_id)
    assert (workspace / "a.py").read_text() == "two\n"
    assert editor.buffers["a.py"] == "two\n"

    # Restoring to the second turn: the buffer matched the disk then, so it follows it.
    await host.restore(first.session_id, second.checkpoint)
    assert (workspace / "a.py").read_text() == "one\n"
    assert editor.buffers["a.py"] == "one\n"


async def test_a_buffer_edited_after_the_turn_is_a_conflict_until_forced(fake, workspace):
    host, editor = fake
    first = await host.send("one")
    editor.buffers["a.py"] = "typed since\n"  # disk still "one\n": the user's unsaved edit
    kept = await host.restore(first.session_id, first.checkpoint)
    assert kept.restored_files == [] and kept.conflicts == ["a.py"]
    assert editor.buffers["a.py"] == "typed since\n"
    assert (workspace / "a.py").read_text() == "one\n"
    await host.undo_restore(first.session_id)  # exact: the conversation back, no files
    done = await host.restore(first.session_id, first.checkpoint, force=True)
    assert done.restored_files == ["a.py"] and done.conflicts == []
    assert editor.buffers["a.py"] == ORIGINAL
    # ... and undo brings the typing back, since the restore's snapshot kept it.
    await host.undo_restore(first.session_id)
    assert (workspace / "a.py").read_text() == "one\n"
    assert editor.buffers["a.py"] == "typed since\n"


async def test_a_restore_cut_off_between_the_disk_and_the_buffer_is_finished(fake, workspace):
    """The restore's jump names the buffer's text too, so whoever finishes an
    interrupted restore brings the open buffer back, not just the disk."""
    host, editor = fake
    editor.buffers["a.py"] = "typed\n"
    first = await host.send("one")

    class DiesAfterTheDisk(FakeEditor):
        async def write_bytes(self, path, data, *, buffer=None, **disk):
            await DiskWorkspace.write_bytes(self, path, data, **disk)
            raise ConnectionError("the editor went away before the buffer edit")

    dying = DiesAfterTheDisk(workspace)
    dying.buffers = editor.buffers
    host.workspace = dying
    with pytest.raises(ConnectionError):
        await host.restore(first.session_id, first.checkpoint)
    assert (workspace / "a.py").read_text() == ORIGINAL
    assert editor.buffers["a.py"] == "one\n"  # the buffer was not reached
    host.workspace = editor
    await host.resume(first.session_id)
    assert editor.buffers["a.py"] == "typed\n"
    events = await host.store.read(first.session_id)
    assert type(events[-1]) is ev.RestoreApplied and events[-1].kept == []


async def test_a_buffer_only_difference_is_restored_without_closed_buffers(fake, workspace):
    host, editor = fake
    editor.buffers["a.py"] = "typed\n"
    first = await host.send("one")
    editor.buffers.clear()  # the user closed the buffer: only the disk is put back
    done = await host.restore(first.session_id, first.checkpoint)
    assert done.restored_files == ["a.py"]
    assert (workspace / "a.py").read_text() == ORIGINAL
    assert editor.buffers == {}


async def test_garbage_collection_keeps_unsaved_buffer_blobs(tmp_path):
    store = open_store("memory:")
    kept = await store.blobs.put(b"unsaved text")
    await store.append(
        "s1",
        [ev.FileSnapshot(path="a.py", before=None, after=None, buffer_before=kept)],
        expected_head=0,
    )
    await collect_garbage(store, grace_seconds=-1)
    assert await store.blobs.get(kept) == b"unsaved text"


# -- EditorWorkspace in process, on a fake server


class FakeServer:
    """pygls's document store, and an editor that applies each edit it is sent."""

    def __init__(self, root: Path) -> None:
        from pygls.workspace import Workspace as Documents

        self.workspace = Documents(root.as_uri(), lsp.TextDocumentSyncKind.Incremental)
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []
        self.messages: list[lsp.ShowMessageParams] = []

    def open(self, path: Path, text: str) -> None:
        self.workspace.put_text_document(lsp.TextDocumentItem(path.as_uri(), "python", 1, text))

    async def workspace_apply_edit_async(self, params):
        self.edits.append(params)
        for uri, edits in params.edit.changes.items():
            doc = self.workspace.get_text_document(uri)
            for edit in edits:
                self.workspace.update_text_document(
                    lsp.VersionedTextDocumentIdentifier(doc.version + 1, uri),
                    lsp.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text),
                )
        return lsp.ApplyWorkspaceEditResult(applied=True)

    def window_show_message(self, params) -> None:
        self.messages.append(params)


@pytest.fixture
def in_process(tmp_path, workspace):
    from agent_host.server.editor import EditorWorkspace

    server = FakeServer(workspace)
    return server, EditorWorkspace(server, DiskWorkspace([workspace]))  # type: ignore[arg-type]


async def test_only_buffers_inside_the_roots_count(in_process, tmp_path, workspace):
    server, editor = in_process
    outside = tmp_path / "elsewhere" / "a.py"
    server.open(outside, "not ours\n")
    assert await editor.read_bytes("a.py") == ORIGINAL.encode()
    assert await editor.buffer_text("a.py") is None
    server.open(workspace / "a.py", "ours\n")
    assert await editor.read_bytes("a.py") == b"ours\n"
    assert await editor.read_disk("a.py") == ORIGINAL.encode()


@pytest.mark.parametrize("text", ["x\r\ny", "x\ry\n", "", "\U0001f642\n\U0001f642", "a\n\n"])
async def test_a_write_replaces_the_whole_buffer_whatever_its_line_ends(
    in_process, workspace, text
):
    server, editor = in_process
    server.open(workspace / "a.py", text)
    await editor.write_bytes("a.py", b"new\r\ncontent")
    doc = server.workspace.get_text_document((workspace / "a.py").as_uri())
    assert doc.source == "new\r\ncontent"
    assert server.messages == []


async def test_content_that_is_not_utf8_leaves_the_buffer_and_says_so(in_process, workspace):
    server, editor = in_process
    server.open(workspace / "a.py", ORIGINAL)
    await editor.write_bytes("a.py", b"caf\xe9\n")
    assert (workspace / "a.py").read_bytes() == b"caf\xe9\n"
    assert server.edits == []
    assert "a.py" in server.messages[0].message
