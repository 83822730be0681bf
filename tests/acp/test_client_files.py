"""The client's files over ACP: reads see its unsaved buffers, writes and restores
go to the editor (which saves them), and a client that cannot is not asked.
tests/acp/test_editor_writes.py has editors that check the disk, normalise and refuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
from acp import schema as s

from .conftest import RecordingClient, new_session, results, say

FS = s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=True))
READ_A = {"name": "read_file", "arguments": {"path": "a.py"}}


class EditorClient(RecordingClient):
    """An editor with open buffers (absolute path -> text, unsaved until the user
    saves); files it has no buffer of are read from disk, as an editor does. It
    writes as agent-shell and CodeCompanion do: into the buffer, then saves it."""

    def __init__(self) -> None:
        super().__init__()
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.fail_reads = False

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> s.ReadTextFileResponse:
        self.reads.append(path)
        if self.fail_reads:
            raise acp.RequestError(-32603, "the test editor cannot read")
        text = self.buffers.get(path)
        return s.ReadTextFileResponse(content=Path(path).read_text() if text is None else text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> s.WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        Path(path).write_text(content)  # saved
        return s.WriteTextFileResponse()


def write(path: str, content: str) -> dict:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


async def test_read_file_sees_the_unsaved_buffer(spawn, workspace):
    client = EditorClient()
    a = str(workspace.resolve() / "a.py")
    client.buffers[a] = "print('unsaved')\n"
    steps = [{"tool_calls": [READ_A]}, {"text": "Read."}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "read a.py")

    [output] = results(client, sid)
    assert "print('unsaved')" in output
    assert a in client.reads
    assert (workspace / "a.py").read_text() == "print('a')\n"  # the disk untouched


async def test_write_file_reaches_the_disk_and_the_editor(spawn, workspace):
    client = EditorClient()
    steps = [{"tool_calls": [write("b.py", "b = 2\n")]}, {"text": "Written."}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "add b.py")

    assert (workspace / "b.py").read_text() == "b = 2\n"
    assert client.writes == [(str(workspace.resolve() / "b.py"), "b = 2\n")]


async def test_rewind_brings_back_the_file_and_says_the_unsaved_text_could_not(spawn, workspace):
    # fs/write_text_file saves what it is given: the unsaved text the buffer had
    # cannot go back without being saved, so the saved file is restored, and the
    # buffer reported.
    client = EditorClient()
    a = str(workspace.resolve() / "a.py")
    client.buffers[a] = "print('unsaved')\n"
    steps = [{"tool_calls": [write("a.py", "v1\n")]}, {"text": "Wrote v1."}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write v1")
        after_turn = (workspace / "a.py").read_text(), client.buffers[a]
        client.writes.clear()
        checkpoint = (await conn.ext_method("agent-host/checkpoints", {"sessionId": sid}))[
            "checkpoints"
        ][0]["seq"]
        restored = await conn.ext_method(
            "agent-host/restore", {"sessionId": sid, "seq": checkpoint}
        )

    assert after_turn == ("v1\n", "v1\n")
    assert (workspace / "a.py").read_text() == "print('a')\n"
    assert client.writes == [(a, "print('a')\n")]
    assert restored["restoredFiles"] == ["a.py"] and restored["unrevertedBuffers"] == ["a.py"]


async def test_a_client_that_cannot_read_falls_back_to_the_disk(spawn, workspace):
    client = EditorClient()
    client.fail_reads = True
    client.buffers[str(workspace.resolve() / "a.py")] = "print('unsaved')\n"
    steps = [{"tool_calls": [READ_A]}, {"text": "Read."}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "read a.py")

    [output] = results(client, sid)
    assert "print('a')" in output and "unsaved" not in output
    assert client.reads  # asked, and it failed


async def test_binary_files_are_read_from_disk(spawn, workspace):
    (workspace / "blob.bin").write_bytes(b"\x00\xff\xfe")
    client = EditorClient()
    steps = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "blob.bin"}}]}, {}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=FS) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "read the blob")

    [output] = results(client, sid)
    assert "binary file" in output
    assert client.reads == []


async def test_a_client_without_fs_capabilities_is_never_asked(spawn, workspace):
    client = EditorClient()
    client.buffers[str(workspace.resolve() / "a.py")] = "print('unsaved')\n"
    steps = [{"tool_calls": [READ_A, write("a.py", "v1\n")]}, {"text": "Done."}]
    async with spawn(steps, "--approval", "auto", client=client) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "read and write a.py")
        await say(conn, sid, "/rewind -1")

    assert "print('a')" in results(client, sid)[0]
    assert client.reads == [] and client.writes == []
    assert (workspace / "a.py").read_text() == "print('a')\n"
