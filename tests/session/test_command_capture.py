"""What a turn's shell commands change is captured, listed, restored and undone
exactly, like the agent's own edits; what is not captured is said."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost

from ..conftest import make_backend
from .test_host import script

SCRIPT_SH = "#!/bin/sh\necho hi\n"


def tree(root) -> dict[str, tuple[bytes, bool]]:
    """Every file: its bytes and whether its owner may execute it."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.parts:
            executable = bool(path.stat().st_mode & stat.S_IXUSR)
            out[path.relative_to(root).as_posix()] = (path.read_bytes(), executable)
    return out


def command(text: str) -> dict:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": text}}]}


@pytest.fixture(params=["file", "sqlite"])
def backend(request, tmp_path):
    return make_backend(request.param, tmp_path)


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "a.py").write_text("a = 1\n")
    (root / "b.txt").write_text("bee\n")
    (root / "old.txt").write_text("moved away\n")
    (root / "run.sh").write_text(SCRIPT_SH)
    (root / "src" / "m.py").write_text("x = 1\ny = 2\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "node_modules").mkdir()
    return root


async def test_a_commands_edits_are_restored_and_undone_exactly(tmp_path, ws, backend):
    steps = [
        command(
            "sed -i 's/1/100/' a.py && rm b.txt && mv old.txt new.txt && "
            "mkdir -p gen/deep && echo made > gen/deep/f.txt && chmod +x run.sh && "
            "python3 -c \"open('blob.bin','wb').write(bytes(range(256)))\" && "
            "cd src && sed -i 's/y = 2/y = 3/' m.py"
        ),
        {"text": "changed things"},
        command("echo one > half.txt && false && echo two > never.txt"),
        {"text": "failed halfway"},
    ]
    host = AgentHost(
        store=backend.open(), model=script(tmp_path, steps), workdir=ws, auto_compact=None
    )
    before = tree(ws)
    first = await host.send("change things with the shell")
    second = await host.send("and fail halfway")
    after = tree(ws)
    assert after["a.py"][0] == b"a = 100\n" and after["run.sh"][1]
    assert "half.txt" in after and "never.txt" not in after

    cp1, cp2 = await host.list_checkpoints()
    assert sorted(cp1.files) == sorted(
        ["a.py", "b.txt", "old.txt", "new.txt", "gen/deep/f.txt", "run.sh", "blob.bin", "src/m.py"]
    )
    assert sorted(cp1.from_commands) == sorted(cp1.files)
    assert cp2.files == ["half.txt"] == cp2.from_commands

    restored = await host.restore(host.session_id, first.checkpoint)
    assert tree(ws) == before  # bytes and exec bits
    assert restored.conflicts == [] and restored.not_captured == []
    await host.undo_restore()
    assert tree(ws) == after
    await host.restore(host.session_id, second.checkpoint)
    assert "half.txt" not in tree(ws) and tree(ws)["a.py"][0] == b"a = 100\n"
    await host.close()


async def test_ignored_and_oversized_changes_are_reported_not_captured(tmp_path, ws, backend):
    steps = [
        command("echo x > debug.log && echo y > node_modules/dep.js && echo z > a.py"),
        {"text": "done"},
    ]
    host = AgentHost(
        store=backend.open(), model=script(tmp_path, steps), workdir=ws, auto_compact=None
    )
    result = await host.send("make noise")
    (checkpoint,) = await host.list_checkpoints()
    assert checkpoint.files == ["a.py"]
    assert sorted(checkpoint.not_captured) == ["debug.log", "node_modules/"]
    restored = await host.restore(host.session_id, result.checkpoint)
    assert sorted(restored.not_captured) == ["debug.log", "node_modules/"]
    assert (ws / "a.py").read_text() == "a = 1\n"
    assert (ws / "debug.log").exists()  # said, not silently left
    await host.close()


async def test_the_users_edits_between_turns_are_not_the_commands(tmp_path, ws, backend):
    steps = [command("echo agent > a.py"), {"text": "1"}, command("true"), {"text": "2"}]
    host = AgentHost(
        store=backend.open(), model=script(tmp_path, steps), workdir=ws, auto_compact=None
    )
    first = await host.send("one")
    (ws / "b.txt").write_text("the user's b\n")  # between turns
    await host.send("two")
    events = await host.store.read(host.session_id)
    snapshots = [e for e in events if type(e) is ev.FileSnapshot]
    assert [s.path for s in snapshots] == ["a.py"]
    (ws / "a.py").write_text("the user's a\n")
    restored = await host.restore(host.session_id, first.checkpoint)
    assert restored.conflicts == ["a.py"]  # the user's edit after the command: kept
    assert (ws / "a.py").read_text() == "the user's a\n"
    assert (ws / "b.txt").read_text() == "the user's b\n"
    await host.close()


async def test_without_capture_a_command_changes_nothing_in_the_log(tmp_path, ws):
    steps = [command("echo z > a.py"), {"text": "done"}]
    host = AgentHost(
        store=tmp_path / "store",
        model=script(tmp_path, steps),
        workdir=ws,
        auto_compact=None,
        capture_commands=False,
    )
    await host.send("go")
    (checkpoint,) = await host.list_checkpoints()
    assert checkpoint.files == []
    await host.close()
    assert os.path.exists(ws / "a.py")


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


async def test_write_temp_files_are_never_captured_and_swept_only_when_their_writer_is_gone(
    tmp_path, ws, backend
):
    """A write killed mid-way leaves ``.<name>.<pid>-<hex>.tmp``: a command's capture
    never takes one for the user's file, and sweeps the ones whose writer is gone --
    never one a live process may still rename."""
    import subprocess

    dead = dead_pid()
    live = subprocess.Popen(["sleep", "60"])
    stray = f".a.py.{dead}-0123456789ab.tmp"
    in_use = f".b.txt.{live.pid}-0123456789ab.tmp"
    (ws / stray).write_text("half of a write\n")
    (ws / in_use).write_text("a write going on\n")
    made = f".src.{dead}-abcdefabcdef.tmp"  # as if a writer died during the command
    steps = [command(f"echo z > a.py && echo half > src/{made}"), {"text": "done"}]
    host = AgentHost(
        store=backend.open(), model=script(tmp_path, steps), workdir=ws, auto_compact=None
    )
    try:
        result = await host.send("change a.py")
        (checkpoint,) = await host.list_checkpoints()
        assert checkpoint.files == ["a.py"] and checkpoint.not_captured == []
        assert not (ws / stray).exists() and not (ws / "src" / made).exists()
        assert (ws / in_use).read_text() == "a write going on\n"
        restored = await host.restore(host.session_id, result.checkpoint)
        assert restored.restored_files == ["a.py"] and restored.not_captured == []
        assert (ws / "a.py").read_text() == "a = 1\n"
        assert (ws / in_use).read_text() == "a write going on\n"
    finally:
        live.kill()
        live.wait()
        await host.close()


async def test_gc_keeps_what_a_capture_a_crash_cut_off_needs(tmp_path, ws, backend):
    """A crash left a command's capture pending: its stored index and the contents
    it names are referenced by no file snapshot yet, and gc keeps them, so the next
    operation still logs the command's changes and a restore puts them back."""
    from agent_host.session.capture import WorkspaceIndex
    from agent_host.session.store import collect_garbage

    store = backend.open()
    before = tree(ws)
    index = WorkspaceIndex([ws], store.blobs)
    await index.refresh()
    saved = await index.save()
    await index.close()
    opening = [
        ev.SessionStarted(workspace=str(ws)),
        ev.UserPrompt(text="run it"),
        ev.CaptureStarted(index=saved),
    ]
    await store.append("cut-off", opening, expected_head=0)
    (ws / "a.py").write_text("a = 2\n")  # what the command did before the crash
    (ws / "b.txt").unlink()
    await collect_garbage(store, grace_seconds=-1)
    host = AgentHost(store=store, workdir=ws, auto_compact=None)
    try:
        (checkpoint,) = await host.list_checkpoints("cut-off")
        assert sorted(checkpoint.files) == ["a.py", "b.txt"]
        done = await host.restore("cut-off", checkpoint.seq)
        assert done.not_captured == [] and tree(ws) == before
    finally:
        await host.close()
        await store.close()


async def test_a_turn_cancelled_mid_command_logs_its_changes_with_the_close(tmp_path, ws, backend):
    """The capture's end waits for the turn's next append; a cancel makes that the
    close's: the command's changes are logged, before its cancelled result, and
    restored exactly -- nothing left pending."""
    steps = [command("echo changed > a.py && sleep 30"), {"text": "-"}]
    host = AgentHost(
        store=backend.open(), model=script(tmp_path, steps), workdir=ws, auto_compact=None
    )
    before = tree(ws)
    turn = asyncio.ensure_future(host.send("change and hang"))
    for _ in range(600):
        if (ws / "a.py").read_text() == "changed\n":
            break
        await asyncio.sleep(0.05)
    assert await host.cancel()
    result = await turn
    assert result.stop_reason == "cancelled"

    log = await host.store.read(host.session_id)
    kinds = [type(e) for e in log]
    assert kinds.count(ev.CaptureStarted) == kinds.count(ev.CaptureEnded) == 1
    snapshot = next(e for e in log if type(e) is ev.FileSnapshot and e.path == "a.py")
    end = kinds.index(ev.CaptureEnded)
    assert kinds.index(ev.ToolCall) < log.index(snapshot) < end < kinds.index(ev.ToolResult)
    restored = await host.restore(host.session_id, result.checkpoint)
    assert restored.conflicts == [] and restored.not_captured == []
    assert tree(ws) == before
    await host.close()
