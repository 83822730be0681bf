"""A restore (and its undo) killed before any one of its durable steps leaves the
session wholly restored or wholly not, and a new process finishes what it began.

Every crash point is tried, not a sample: a first run counts the operation's
durable steps (each fsync, rename, unlink and SQLite commit, see crash_points),
then one run per step is SIGKILLed just before it. After each, the test -- a new
process for that store -- resumes the session and checks the workspace is exactly
as before or exactly as after, that the checkpoints say the same, and that the
opposite operation (undo, or the restore again) still works.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agent_host.session.host import AgentHost

from ..conftest import make_backend
from .store.test_crash import wait_for_backends_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODIFIED = [f"src/m{i:02}.py" for i in range(30)]
DELETED = [f"src/d{i}.py" for i in range(5)]
CREATED = [f"new/c{i}.py" for i in range(5)]


def files(root: Path) -> dict[str, bytes]:
    """Every entry under ``root``, temp files included: a stray one is a failure."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def store_url(backend: str, base: Path) -> str:
    return (base / "store").as_uri() if backend == "file" else f"sqlite://{base / 'store.db'}"


async def make_template(backend: str, base: Path) -> tuple[str, int]:
    """A session whose one turn changed 40 files: 30 edited, 5 deleted, 5 created."""
    ws = base / "ws"
    for path in MODIFIED + DELETED:
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(f"# {path}: as the user left it\n" * 20)
    (ws / "keep.txt").write_text("never touched\n")
    calls = [
        *(
            {"name": "write_file", "arguments": {"path": p, "content": f"# {p} v2\n" * 30}}
            for p in MODIFIED + CREATED
        ),
        *({"name": "delete_file", "arguments": {"path": p}} for p in DELETED),
    ]
    script = base / "script.json"
    script.write_text(json.dumps({"steps": [{"tool_calls": calls}, {"text": "done"}]}))
    host = AgentHost(
        store=store_url(backend, base), model=f"scripted:{script}", workdir=ws, auto_compact=None
    )
    result = await host.send("change forty files")
    assert result.stop_reason == "end_turn"
    (checkpoint,) = await host.list_checkpoints()
    assert len(checkpoint.files) == 40
    await host.close()
    return host.session_id, result.checkpoint


class Crasher:
    """The crash_points process: forks one child per job."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.session.crash_points"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, **job) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the crash_points process died"
        outcome = json.loads(line)
        assert "left_running" not in outcome, f"the job's processes did not end: {outcome}"
        return outcome

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def fast_tmp(tmp_path):
    """A folder in memory where there is one (fsync is free there, and a kill --
    not a power cut -- is what is tested), else tmp_path."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="restore-crash-", dir=shm))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def crasher():
    c = Crasher()
    yield c
    c.close()


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_restore_and_its_undo_survive_a_crash_at_every_durable_step(
    backend, fast_tmp, crasher
):
    tmp_path = fast_tmp
    # Every case runs in the same folder: the session belongs to the folder it was
    # started in, and restores refuse to write its files anywhere else.
    case = tmp_path / "case"
    url = store_url(backend, case)
    session, checkpoint = await make_template(backend, case)
    after_turn = files(case / "ws")  # what restore takes back ...
    shutil.copytree(case, tmp_path / "turned", symlinks=True)
    host = AgentHost(store=url, workdir=case / "ws", auto_compact=None)
    await host.restore(session, checkpoint)
    await host.close()
    before_turn = files(case / "ws")  # ... to this
    assert set(before_turn) == (set(after_turn) - set(CREATED)) | set(DELETED)
    shutil.move(case, tmp_path / "restored")

    states = {"before": before_turn, "after": after_turn}
    for op, start, undone_state, done_state in [
        ("restore", tmp_path / "turned", "after", "before"),
        ("undo", tmp_path / "restored", "before", "after"),
    ]:
        seen = {"crash left it undone": 0, "crash left it done": 0}
        k = 1
        while True:
            shutil.copytree(start, case, symlinks=True)
            outcome = crasher.run(
                op=op,
                store=url,
                workspace=str(case / "ws"),
                session=session,
                seq=checkpoint,
                kill_at=k,
                report=str(tmp_path / "report.json"),
            )
            assert "error" not in outcome, f"{op} failed on its own: {outcome['error']}"
            host = AgentHost(store=url, workdir=case / "ws", auto_compact=None)
            await host.resume(session)
            now = files(case / "ws")
            done = now == states[done_state]
            assert done or now == states[undone_state], (
                f"{op} killed before durable step {k}: the workspace is half done "
                f"(differs from both states in {_diff(now, states)})"
            )
            prompts = [c.seq for c in await host.list_checkpoints()]
            assert prompts == ([] if (op == "restore") == done else [checkpoint]), (op, k)
            # What the crash left must still go either way.
            if prompts:
                await host.restore(session, checkpoint)
                assert files(case / "ws") == before_turn, (op, k)
            else:
                await host.undo_restore(session)
                assert files(case / "ws") == after_turn, (op, k)
            await host.close()
            shutil.rmtree(case)
            (tmp_path / "report.json").unlink(missing_ok=True)
            if not outcome["killed"]:
                assert done, f"{op} ran to the end and left the files {undone_state}"
                steps = outcome["steps"]
                break
            seen["crash left it done" if done else "crash left it undone"] += 1
            k += 1
        # The intent's append is one of the steps: crashes before it leave the
        # operation undone, every crash after it is finished by the resume.
        assert seen["crash left it undone"] >= 1 and seen["crash left it done"] >= 40, seen
        assert steps == k - 1, (steps, k)


def _diff(now: dict[str, bytes], states: dict[str, dict[str, bytes]]) -> str:
    parts = []
    for name, want in states.items():
        paths = sorted(p for p in set(now) | set(want) if now.get(p) != want.get(p))
        parts.append(f"{name}: {paths[:5]}{'…' if len(paths) > 5 else ''}")
    return "; ".join(parts)


COMMAND_TURN = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b2\n"}}]},
    {
        "tool_calls": [
            {
                "name": "run_command",
                "arguments": {"command": "echo changed > a.txt; echo new > c.txt; rm d.txt"},
            }
        ]
    },
    {"text": "done"},
]


@pytest.mark.parametrize("backend", ["file", "sqlite", "postgres"])
async def test_a_turn_with_a_command_killed_at_every_durable_step_restores_exactly(
    backend, fast_tmp, crasher, request
):
    """Whatever step of the turn (the file tool's write-ahead, the capture's
    write-ahead, the command's changes, the result, the end) a crash lands
    before, a restore to before the prompt in a new process puts every file back
    -- or names, in notCaptured, each one it cannot -- and leaves no temp file."""
    if backend == "postgres":
        url = make_backend("postgres", fast_tmp, request).url
    else:
        url = store_url(backend, fast_tmp)
    ws = fast_tmp / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt", "d.txt"):
        (ws / name).write_text(f"{name} as the user left it\n")
    before = files(ws)
    script = fast_tmp / "script.json"
    script.write_text(json.dumps({"steps": COMMAND_TURN}))
    checker = AgentHost(store=url, workdir=ws, auto_compact=None)
    seen = {"not logged": 0, "exact": 0, "named": 0}
    try:
        k = 1
        while True:
            for path in ws.iterdir():
                path.unlink()
            for name, data in before.items():
                (ws / name).write_bytes(data)
            session = f"crash-{k:04}"
            outcome = crasher.run(
                op="turn",
                prompt="change the files",
                model=f"scripted:{script}",
                store=url,
                workspace=str(ws),
                session=session,
                kill_at=k,
                report=str(fast_tmp / "report.json"),
            )
            assert "error" not in outcome, f"the turn failed on its own: {outcome['error']}"
            if backend == "postgres":  # its lease goes when the server sees it die
                wait_for_backends_of(url, outcome["pid"])
            prompts = await checker.list_checkpoints(session)
            if not prompts:  # killed before the prompt was logged: nothing ran
                assert files(ws) == before, k
                seen["not logged"] += 1
            else:
                done = await checker.restore(session, prompts[0].seq)
                now = files(ws)
                wrong = sorted(p for p in set(now) | set(before) if now.get(p) != before.get(p))
                named = set(done.not_captured)
                assert done.conflicts == [], (k, done)
                assert "./" in named or set(wrong) <= named, (
                    f"killed before durable step {k}: the restore left {wrong} as the turn "
                    f"made them and named {sorted(named)} as not captured"
                )
                seen["named" if wrong else "exact"] += 1
            (fast_tmp / "report.json").unlink(missing_ok=True)
            if not outcome["killed"]:
                steps = outcome["steps"]
                break
            k += 1
    finally:
        await checker.close()
    assert steps == k - 1 and seen["exact"] >= steps // 2, (steps, seen)


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_write_killed_midway_leaves_no_temp_file_past_the_next_operation(
    backend, fast_tmp, crasher
):
    """SIGKILL while write_file's temp file is being written: the next operation on
    the session sweeps it (its writer is dead), and leaves a live writer's alone."""
    url = store_url(backend, fast_tmp)
    ws = fast_tmp / "ws"
    ws.mkdir()
    (ws / "b.txt").write_text("b as the user left it\n")
    before = files(ws)
    script = fast_tmp / "script.json"
    write = {"name": "write_file", "arguments": {"path": "b.txt", "content": "b2\n" * 50_000}}
    script.write_text(json.dumps({"steps": [{"tool_calls": [write]}, {"text": "done"}]}))
    checker = AgentHost(store=url, workdir=ws, auto_compact=None)
    try:
        session = "write-001"
        outcome = crasher.run(
            op="turn",
            prompt="rewrite b.txt",
            model=f"scripted:{script}",
            store=url,
            workspace=str(ws),
            session=session,
            kill_at=0,
            # The kill lands at the first durable step the temp file is there for,
            # its fsync at the latest: not a step number, which threads reorder.
            kill_when_present=os.path.join(glob.escape(str(ws)), ".b.txt.*.tmp"),
            report=str(fast_tmp / "report.json"),
        )
        assert outcome["killed"], f"the turn ended and its write's temp file never was: {outcome}"
        strays = sorted(p.name for p in ws.iterdir() if p.name.startswith(".b.txt."))
        live = f".b.txt.{os.getpid()}-0123456789ab.tmp"  # a write of this process's
        (ws / live).write_text("being written\n")
        (prompt,) = await checker.list_checkpoints(session)
        await checker.restore(session, prompt.seq)
        assert files(ws) == {**before, live: b"being written\n"}, strays
        # It was the dead writer's: named with its pid.
        assert strays == [f".b.txt.{outcome['pid']}-{strays[0][-16:-4]}.tmp"], strays
    finally:
        await checker.close()
