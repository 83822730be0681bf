"""The editor writes (issue 23, findings 1 and 2): with ``fs.writeTextFile`` offered,
a tool's, a rewind's and an undo's writes are ``fs/write_text_file`` alone; what
the editor makes of them (CodeCompanion adds a final newline) counts as the
agent's; a refusal fails the tool call or keeps the file, with the editor's reason.

The client here is an editor with the files open in buffers, writing as agent-shell
and CodeCompanion do (into the buffer visiting the file, then saving it). Like
Emacs, it notices a file changed on disk under its buffer: it then "asks the
user", who cancels -- the -32603 "Operation cancelled by user" agent-shell sends.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import acp
from acp import schema as s

from .conftest import RecordingClient, new_session, results, say

FS = s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=True))
CANCELLED = "Operation cancelled by user"


class Editor(RecordingClient):
    def __init__(self, *, normalise: bool = False) -> None:
        super().__init__()
        self.normalise = normalise
        """Write as CodeCompanion does: content split on "\\n" into buffer lines,
        saved with a newline after the last: one more final newline."""
        self.refuse = False
        """Answer every write as a user cancelling Emacs's question."""
        self.visited: dict[str, str] = {}
        """path -> the file's content when the buffer last read or saved it."""
        self.writes: list[tuple[str, str]] = []
        self.questions: list[str] = []
        """"changed on disk; really edit the buffer?": asked when a write came for
        a buffer whose file changed on disk since it was visited."""

    def open(self, path: Path) -> None:
        self.visited[str(path.resolve())] = path.read_text()

    def user_saves(self, path: Path, text: str) -> None:
        """The user edits the buffer and saves: a real edit, not the agent's."""
        path.write_text(text)
        self.visited[str(path.resolve())] = text

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> s.ReadTextFileResponse:
        # CodeCompanion reads the file and gives CRLF back as LF.
        return s.ReadTextFileResponse(content=Path(path).read_text().replace("\r\n", "\n"))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> s.WriteTextFileResponse:
        self.writes.append((path, content))
        file = Path(path)
        on_disk = file.read_text() if file.exists() else None
        if not file.parent.is_dir():
            raise acp.RequestError(-32603, f"File write failed for {path}: ENOENT")
        if path in self.visited and on_disk != self.visited[path]:
            self.questions.append(f"{file.name} changed on disk; really edit the buffer?")
            raise acp.RequestError(-32603, CANCELLED)
        if self.refuse:
            raise acp.RequestError(-32603, CANCELLED)
        saved = content + "\n" if self.normalise else content
        file.write_text(saved)
        self.visited[path] = saved
        return s.WriteTextFileResponse()


def write_a(content: str) -> dict:
    return {"name": "write_file", "arguments": {"path": "a.py", "content": content}}


STEPS = [{"tool_calls": [write_a("v1\n")]}, {"text": "Wrote v1."}]


def finished(editor: Editor, session_id: str) -> list[Any]:
    """The tool calls' last updates: completed or failed."""
    return [
        u for u in editor.of("tool_call_update", session_id) if u.status in ("completed", "failed")
    ]


def force_hint(text: str) -> str:
    found = re.search(r"/rewind \d+ --force", text)
    assert found, text
    return found[0]


async def test_a_tool_edit_is_one_editor_write_the_disk_not_written_first(spawn, workspace):
    editor = Editor()
    a = workspace / "a.py"
    editor.open(a)
    async with spawn(STEPS, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")

    assert editor.questions == []
    assert editor.writes == [(str(a.resolve()), "v1\n")]
    assert a.read_text() == "v1\n"
    [update] = finished(editor, sid)
    assert update.status == "completed"


async def test_a_new_file_in_a_new_folder_gets_its_folder_before_the_editor_writes_it(
    spawn, workspace
):
    # Editors write into an existing folder (CodeCompanion's write fails otherwise).
    editor = Editor()
    new = {"name": "write_file", "arguments": {"path": "pkg/sub/new.py", "content": "n = 1\n"}}
    steps = [{"tool_calls": [new]}, {"text": "Wrote it."}]
    async with spawn(steps, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "add pkg/sub/new.py")

    assert [u.status for u in finished(editor, sid)] == ["completed"]
    assert (workspace / "pkg" / "sub" / "new.py").read_text() == "n = 1\n"


async def test_rewind_and_undo_through_an_editor_that_adds_a_final_newline(spawn, workspace):
    editor = Editor(normalise=True)
    a = workspace / "a.py"
    editor.open(a)
    async with spawn(STEPS, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        after_turn = a.read_text()
        editor.updates.clear()
        await say(conn, sid, "/rewind -1")
        rewound, after_rewind = editor.text(sid), a.read_text()
        editor.updates.clear()
        await say(conn, sid, "/undo-rewind")
        undone, after_undo = editor.text(sid), a.read_text()
        cycles = []
        for _ in range(3):  # each write lands exactly: no line gained per round trip
            await say(conn, sid, "/rewind -1")
            rewound_again = a.read_text()
            await say(conn, sid, "/undo-rewind")
            cycles.append((rewound_again, a.read_text()))

    assert after_turn == "v1\n\n"  # as CodeCompanion leaves it: learned from this write
    assert "restored 1 file (a.py)" in rewound and "Kept" not in rewound, rewound
    assert after_rewind == "print('a')\n"  # sent one newline short: lands exactly
    assert "restored 1 file (a.py)" in undone and "Left" not in undone, undone
    assert after_undo == after_turn
    assert cycles == [(after_rewind, after_turn)] * 3
    assert editor.questions == []


async def test_a_real_user_edit_is_kept_and_rewind_force_overwrites_it(spawn, workspace):
    editor = Editor(normalise=True)
    a = workspace / "a.py"
    editor.open(a)
    async with spawn(STEPS, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        editor.user_saves(a, "v1\nmine\n")
        editor.updates.clear()
        await say(conn, sid, "/rewind -1")
        kept, after_kept = editor.text(sid), a.read_text()
        editor.updates.clear()
        await say(conn, sid, force_hint(kept))
        forced, after_forced = editor.text(sid), a.read_text()

    assert "Kept as they are" in kept and "a.py" in kept
    assert kept.endswith(force_hint(kept)), kept  # the message ends with what to type
    assert after_kept == "v1\nmine\n"
    assert "restored 1 file (a.py)" in forced and "Kept" not in forced, forced
    assert after_forced == "print('a')\n"  # exactly: the extra newline learned
    assert editor.questions == []


async def test_undo_rewind_over_a_user_edit_asks_for_force(spawn, workspace):
    editor = Editor()
    a = workspace / "a.py"
    editor.open(a)
    async with spawn(STEPS, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        await say(conn, sid, "/rewind -1")
        editor.user_saves(a, "mine\n")
        editor.updates.clear()
        await say(conn, sid, "/undo-rewind")
        refused, after_refused = editor.text(sid), a.read_text()
        editor.updates.clear()
        await say(conn, sid, "/undo-rewind --force")
        forced = editor.text(sid)

    assert "/undo-rewind --force" in refused and "a.py" in refused, refused
    assert after_refused == "mine\n"
    assert forced.startswith("Undid the last rewind: restored 1 file (a.py)"), forced
    assert a.read_text() == "v1\n"


async def test_a_refused_write_fails_the_tool_call_and_the_model_is_told(spawn, workspace):
    editor = Editor()
    editor.refuse = True
    a = workspace / "a.py"
    async with spawn(STEPS, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        [update] = finished(editor, sid)
        [output] = results(editor, sid)  # the tool result the model reads
        editor.refuse = False
        editor.updates.clear()
        await say(conn, sid, "/rewind -1")
        rewound = editor.text(sid)

    assert update.status == "failed"
    assert CANCELLED in output and "a.py" in output
    assert a.read_text() == "print('a')\n"
    # The log says what the disk has: nothing to put back, nothing kept.
    assert "restored no files" in rewound and "Kept" not in rewound, rewound


async def test_a_refused_rewind_write_is_reported_with_the_editor_s_reason(spawn, workspace):
    editor = Editor()
    a = workspace / "a.py"
    async with spawn(STEPS, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        seq = (await conn.ext_method("agent-host/checkpoints", {"sessionId": sid}))["checkpoints"][
            0
        ]["seq"]
        editor.refuse = True
        editor.updates.clear()
        await say(conn, sid, "/rewind -1")
        rewound = editor.text(sid)
        await say(conn, sid, "/undo-rewind")
        restored = await conn.ext_method("agent-host/restore", {"sessionId": sid, "seq": seq})

    assert "Not restored (the editor did not write them): a.py" in rewound, rewound
    assert CANCELLED in rewound and "Kept" not in rewound
    assert restored["restoredFiles"] == [] and restored["conflicts"] == []
    assert CANCELLED in restored["notRestored"]["a.py"]
    assert a.read_text() == "v1\n"


async def test_a_refused_write_is_logged_as_the_file_left_so_an_earlier_rewind_restores(
    spawn, workspace
):
    # The second turn's write is refused: the log's record of a.py must be v1 (what
    # the disk holds), not v2 -- else the rewind would see a user's edit and keep it.
    editor = Editor()
    a = workspace / "a.py"
    steps = [*STEPS, {"tool_calls": [write_a("v2\n")]}, {"text": "Wrote v2."}]
    async with spawn(steps, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        editor.refuse = True
        await say(conn, sid, "write v2")
        editor.refuse = False
        editor.updates.clear()
        await say(conn, sid, "/rewind -2")
        rewound = editor.text(sid)

    assert "restored 1 file (a.py)" in rewound and "Kept" not in rewound, rewound
    assert a.read_text() == "print('a')\n"


def test_what_counts_as_an_editor_s_normalisation():
    from agent_host.session.workspace import as_normalised

    assert as_normalised(b"a\nb\n", b"a\nb\n\n")  # CodeCompanion's extra newline
    assert as_normalised(b"a\nb\n", b"a\nb")  # a final newline removed
    assert as_normalised(b"a\r\nb\r\n", b"a\nb\n")  # line ends
    assert as_normalised(None, None)
    assert not as_normalised(b"a\nb\n", b"a\nc\n")  # a real edit
    assert not as_normalised(b"a\nb\n", b"a\nb\n\n\n")  # two blank lines: the user's
    assert not as_normalised(b"a\nb\n", b"a\n\nb\n")
    assert not as_normalised(b"", None) and not as_normalised(None, b"")


async def test_a_crlf_file_read_back_as_lf_is_no_unsaved_buffer(spawn, workspace):
    # CodeCompanion reads CRLF files as LF: that is the file, not unsaved text the
    # rewind would have to give back (and over ACP could not).
    editor = Editor()
    a = workspace / "a.txt"
    a.write_bytes(b"x\r\ny\r\n")
    steps = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "v1\n"}}]},
        {"text": "Wrote v1."},
    ]
    async with spawn(steps, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        seq = (await conn.ext_method("agent-host/checkpoints", {"sessionId": sid}))["checkpoints"][
            0
        ]["seq"]
        restored = await conn.ext_method("agent-host/restore", {"sessionId": sid, "seq": seq})

    assert restored["restoredFiles"] == ["a.txt"] and restored["conflicts"] == []
    assert restored["unrevertedBuffers"] == [], restored
    assert editor.writes[-1] == (str(a.resolve()), "x\r\ny\r\n")


async def test_undo_restore_by_extension_method_keeps_a_changed_file_unless_forced(
    spawn, workspace
):
    editor = Editor()
    a = workspace / "a.py"
    async with spawn(STEPS, "--approval", "auto", client=editor, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        seq = (await conn.ext_method("agent-host/checkpoints", {"sessionId": sid}))["checkpoints"][
            0
        ]["seq"]
        await conn.ext_method("agent-host/restore", {"sessionId": sid, "seq": seq})
        editor.user_saves(a, "mine\n")
        kept = await conn.ext_method("agent-host/undoRestore", {"sessionId": sid})
        after_kept = a.read_text()
        await conn.ext_method("agent-host/restore", {"sessionId": sid, "seq": seq, "force": True})
        editor.user_saves(a, "mine again\n")
        forced = await conn.ext_method("agent-host/undoRestore", {"sessionId": sid, "force": True})

    assert kept["conflicts"] == ["a.py"] and after_kept == "mine\n"  # partial, as before
    assert forced["restoredFiles"] == ["a.py"] and forced["conflicts"] == []
    assert a.read_text() == "mine\n"  # what the forced restore found there
