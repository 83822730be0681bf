"""The agent-host command, run as a real process.

The commands that drive a server (run, history, checkpoints, restore, undo-restore,
compact, delete) spawn a real ``agent-host serve`` child over stdio, with the
scripted model: a turn plays step N of the script, N being the number of assistant
messages already in the session (one per model call).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.rpc.methods import TABLE as METHOD_TABLE
from agent_host.session import open_store
from agent_host.session.events import (
    FileSnapshot,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnEnd,
    UserPrompt,
)
from agent_host.session.turn import CANCELLED

ORIGINAL = "def greet(name):\n    return f'Hi, {name}!'\n"
EDITED = "def greet(name):\n    return f'Hello, {name}!'\n"

EDIT_TURN = [
    {
        "text": "I'll make greet polite.",
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {"path": "greet.py", "old_string": "Hi", "new_string": "Hello"},
            }
        ],
    },
    {"text": "Done: greet says Hello now."},
]


def agent_host(
    *args: str, cwd: Path | None = None, env: dict | None = None, input: str | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_host", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "greet.py").write_text(ORIGINAL)
    return root


@pytest.fixture
def store(tmp_path) -> str:
    return str(tmp_path / "store")


@pytest.fixture
def script(tmp_path):
    def write(steps: list[dict]) -> str:
        path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
        path.write_text(json.dumps({"steps": steps}))
        return f"scripted:{path}"

    return write


def common(store: str, project: Path, model: str | None = None) -> list[str]:
    args = ["--store", store, "--workspace", str(project)]
    return args + (["--model", model] if model else [])


def only_session(store: str) -> str:
    (info,) = [
        json.loads(line)
        for line in agent_host("sessions", "--store", store, "--json").stdout.splitlines()
    ]
    return info["sessionId"]


# -- run, and the commands on its session


def test_run_edits_then_checkpoints_restore_undo_history_compact_delete(
    tmp_path, project, store, script
):
    model = script([*EDIT_TURN, {"text": "And a second answer."}])
    run = agent_host(
        "run", "Make greet polite", "--approve", "auto", *common(store, project, model)
    )
    assert run.returncode == 0, run.stderr
    assert (project / "greet.py").read_text() == EDITED
    assert "I'll make greet polite." in run.stdout
    assert "Done: greet says Hello now." in run.stdout
    assert "  tool edit_file(path='greet.py'" in run.stdout
    assert "  changed greet.py" in run.stdout
    session = only_session(store)
    assert f"[end_turn] session {session}, checkpoint 2" in run.stderr
    assert "Traceback" not in run.stderr

    second = agent_host(
        "run",
        "Anything else?",
        "--session",
        session,
        "--approve",
        "auto",
        *common(store, project, model),
    )
    assert second.returncode == 0, second.stderr
    assert "And a second answer." in second.stdout

    listed = agent_host("checkpoints", session, *common(store, project))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("1 · Make greet polite  (checkpoint 2, ")
    assert lines[1].strip() == "changed: greet.py"
    assert "Anything else?" in lines[2] and lines[3].strip() == "changed: -"
    as_json = [
        json.loads(line)
        for line in agent_host(
            "checkpoints", session, "--json", *common(store, project)
        ).stdout.splitlines()
    ]
    assert [(c["seq"], c["files"]) for c in as_json] == [(2, ["greet.py"]), (as_json[1]["seq"], [])]

    # Restore from another folder, without --workspace: the session's own folder is used.
    restored = agent_host("restore", session, "2", "--store", store, cwd=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert (project / "greet.py").read_text() == ORIGINAL
    assert "1 file (greet.py), 5 messages removed" in restored.stdout  # both turns
    assert f"undo with: agent-host undo-restore {session}" in restored.stderr
    assert agent_host("checkpoints", session, "--json", *common(store, project)).stdout == ""

    undone = agent_host("undo-restore", session, "--json", *common(store, project))
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["restoredFiles"] == ["greet.py"]
    assert (project / "greet.py").read_text() == EDITED

    history = agent_host("history", session, *common(store, project))
    assert history.returncode == 0, history.stderr
    assert history.stdout.startswith(
        "user: Make greet polite\nassistant: I'll make greet polite.\n"
    )
    assert (
        "  > edit_file " in history.stdout and "assistant: And a second answer." in history.stdout
    )
    messages = [
        json.loads(line)
        for line in agent_host(
            "history", session, "--json", "--limit", "2", *common(store, project)
        ).stdout.splitlines()
    ]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "Anything else?"

    compacted = agent_host("compact", session, *common(store, project, model))
    assert compacted.returncode == 0, compacted.stderr
    assert compacted.stdout.startswith(f"compacted session {session}: about ")
    summary = agent_host("history", session, "--json", *common(store, project))
    first = json.loads(summary.stdout.splitlines()[0])
    assert "Make greet polite" in first["content"] and first["role"] == "user"

    deleted = agent_host("delete", session, *common(store, project))
    assert deleted.returncode == 0 and deleted.stdout == f"deleted session {session}\n"
    assert agent_host("sessions", "--store", store, "--json").stdout == ""
    again = agent_host("delete", session, *common(store, project))
    assert again.returncode == 1
    assert again.stderr.startswith(f"agent-host: session '{session}' not found")
    assert "Traceback" not in again.stderr


def test_run_json_prints_each_event_and_the_result(project, store, script):
    model = script(EDIT_TURN)
    run = agent_host(
        "run", "Make greet polite", "--json", "--approve", "auto", *common(store, project, model)
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "user_prompt" and kinds[-2:] == ["turn_end", "result"]
    for kind in (
        "text_delta",
        "assistant_message",
        "tool_call",
        "file_snapshot",
        "tool_result",
        "usage",
    ):
        assert kind in kinds
    session = lines[-1]["sessionId"]
    assert all(line["sessionId"] == session for line in lines)
    result = lines[-1]["data"]
    assert result["stopReason"] == "end_turn" and result["checkpoint"] == 2
    assert result["text"] == "I'll make greet polite.\n\nDone: greet says Hello now."
    # The deltas are the two model calls' texts; the result joins the calls' texts
    # as paragraphs.
    deltas = "".join(line["data"]["text"] for line in lines if line["kind"] == "text_delta")
    assert deltas == result["text"].replace("\n\n", "")
    snapshot = next(line["data"] for line in lines if line["kind"] == "file_snapshot")
    assert snapshot["path"] == "greet.py"


def test_ask_without_a_terminal_rejects_and_says_so(project, store, script):
    model = script(EDIT_TURN)
    run = agent_host(
        "run", "Make greet polite", "--json", *common(store, project, model)
    )  # --approve ask
    assert run.returncode == 0, run.stderr  # the model answered: the turn ended well
    assert (project / "greet.py").read_text() == ORIGINAL
    assert "agent-host: rejected edit_file greet.py" in run.stderr
    assert "--approve auto-edit" in run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    (asked,) = [line for line in lines if line["kind"] == "permission"]
    assert asked["data"]["tool"] == "edit_file" and asked["data"]["outcome"] == "reject_once"
    assert "+    return f'Hello, {name}!'" in asked["data"]["diff"]
    (result,) = [line for line in lines if line["kind"] == "tool_result"]
    assert result["data"]["isError"] and "Permission denied" in result["data"]["output"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize(
    "answer, code, content",
    [(b"y\n", 0, EDITED), (b"\n", 0, ORIGINAL), (b"\x03", 130, ORIGINAL)],
    ids=["yes", "no", "ctrl-c"],
)
def test_ask_on_a_terminal(project, store, script, answer, code, content):
    import pty

    model = script(EDIT_TURN)
    pid, fd = pty.fork()
    if pid == 0:  # the child: agent-host on the terminal
        argv = [sys.executable, "-m", "agent_host", "run", "Make greet polite"]
        os.execv(sys.executable, argv + common(store, project, model))
    screen = b""
    deadline = time.monotonic() + 60
    while b"[a]lways: " not in screen:
        assert time.monotonic() < deadline, screen
        if select.select([fd], [], [], 1)[0]:
            screen += os.read(fd, 4096)
    os.write(fd, answer)
    while True:
        try:
            chunk = os.read(fd, 4096) if select.select([fd], [], [], 60)[0] else b""
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        screen += chunk
    _, status = os.waitpid(pid, 0)
    text = screen.decode()
    assert os.waitstatus_to_exitcode(status) == code, text
    assert "+    return f'Hello, {name}!'" in text  # the diff was shown
    assert "Allow edit_file greet.py? [y]es / [N]o / [a]lways: " in text
    assert (project / "greet.py").read_text() == content


def test_prompt_from_stdin(project, store, script):
    model = script([{"text": "Read you."}])
    run = agent_host("run", "-", *common(store, project, model), input="a prompt\nover two lines\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Read you.\n"
    assert agent_host(
        "history", only_session(store), "--json", *common(store, project)
    ).stdout.startswith(json.dumps({"role": "user", "content": "a prompt\nover two lines\n"}))


# -- failures and exit codes


def test_usage_errors_exit_2(store):
    for args in [
        (),
        ("no-such-command",),
        ("run",),
        ("run", "   "),
        ("run", "hi", "--approve", "sometimes"),
        ("restore", "s1"),
        ("restore", "s1", "two"),
        ("restore", "s1", "2", "--files-only", "--conversation-only"),
        ("history",),
        ("history", "s1", "--limit", "many"),
    ]:
        result = agent_host(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_a_failed_turn_exits_1_with_the_reason(project, store, script):
    exhausted = script([])
    run = agent_host("run", "hi", "--session", "s1", *common(store, project, exhausted))
    assert run.returncode == 1
    assert run.stderr.startswith("agent-host: scripted model ")
    assert "(the script is exhausted) (session s1)" in run.stderr
    assert "Traceback" not in run.stderr
    as_json = agent_host(
        "run", "hi", "--session", "s1", "--json", *common(store, project, exhausted)
    )
    assert as_json.returncode == 1
    last = json.loads(as_json.stdout.splitlines()[-1])
    assert last["kind"] == "error" and last["data"]["code"] == -32007
    # the failed turns are closed in the log all the same
    assert [e.stop_reason for e in _events(store, "s1") if type(e) is TurnEnd] == ["error", "error"]


def test_a_turn_that_does_not_end_well_exits_1(project, store, script):
    model = script([{"text": "This answer is cut", "stop_reason": "max_tokens"}])
    run = agent_host("run", "hi", *common(store, project, model))
    assert run.returncode == 1
    assert run.stdout == "This answer is cut\n"
    assert "[max_tokens] session" in run.stderr
    assert "agent-host: the model's answer was cut off at its output token limit" in run.stderr


def test_server_errors_print_one_line_and_exit_1(project, store):
    bad_id = agent_host("history", "x" * 513, *common(store, project))
    assert bad_id.returncode == 1
    assert bad_id.stderr == (
        f"agent-host: invalid session id '{'x' * 56}... (513 characters): a session id is"
        " 1-512 characters, at most 1024 bytes in UTF-8, with no NUL and no unpaired surrogate\n"
    )
    bad_store = agent_host("run", "hi", "--store", "http://nowhere/x", "--workspace", str(project))
    assert bad_store.returncode == 1
    assert bad_store.stderr.startswith("agent-host: unsupported store URL 'http://nowhere/x'")
    assert "Traceback" not in bad_store.stderr
    no_model = agent_host("compact", "s1", *common(store, project, "nonsense"))
    assert no_model.returncode == 1 and "model 'nonsense' is not one of" in no_model.stderr


def test_a_dying_server_is_reported_with_its_last_words(tmp_path, project, store):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if 'serve' in sys.argv:\n"
        "    sys.stderr.write('boom: this server cannot start\\n')\n"
        "    sys.stderr.flush()\n"
        "    os._exit(3)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = agent_host("history", "s1", *common(store, project), env=env)
    assert result.returncode == 1
    assert "agent-host: the server exited (code 3) before it answered initialize" in result.stderr
    assert "  boom: this server cannot start" in result.stderr


def test_verbose_forwards_the_servers_stderr(project, store):
    quiet = agent_host("history", "s1", *common(store, project))
    assert "[server]" not in quiet.stderr
    loud = agent_host("history", "s1", "-v", *common(store, project))
    assert loud.returncode == 0
    assert "[server] " in loud.stderr


# -- Ctrl-C


@pytest.mark.parametrize(
    "step, wait_for",
    [
        pytest.param(
            {
                "text": "Running the tests.",
                "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 60"}}],
            },
            b"tool run_command",
            id="during-a-command",
        ),
        pytest.param(
            {"text": " ".join(f"word{i}" for i in range(60)), "delay_ms": 200},
            b"word0",
            id="while-the-model-streams",
        ),
    ],
)
def test_ctrl_c_cancels_the_turn_and_leaves_the_session_whole(
    project, store, script, step, wait_for
):
    model = script([step, {"text": "Picked up where we left off."}])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_host",
            "run",
            "go",
            "--session",
            "s1",
            "--approve",
            "auto",
            *common(store, project, model),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    started = time.monotonic()
    seen = _read_until(process, wait_for, timeout=60)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err.decode()
    assert time.monotonic() - started < 50  # the command was stopped, not waited for
    err_text = err.decode()
    assert "agent-host: cancelling the turn" in err_text
    assert "[cancelled] session s1" in err_text and "session s1 is intact" in err_text
    assert wait_for in seen + out

    events = _events(store, "s1")
    assert type(events[-1]) is TurnEnd and events[-1].stop_reason == "cancelled"
    calls = {e.call_id for e in events if type(e) is ToolCall}
    results = {e.call_id: e for e in events if type(e) is ToolResult}
    assert calls == set(results)
    assert all(results[c].output == CANCELLED for c in calls)

    history = agent_host("history", "s1", "--json", *common(store, project))
    messages = [json.loads(line) for line in history.stdout.splitlines()]
    called = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert called == answered == sorted(calls)

    after = agent_host(
        "run", "go on", "--session", "s1", "--approve", "auto", *common(store, project, model)
    )
    assert after.returncode == 0, after.stderr
    assert "Picked up where we left off." in after.stdout


def _read_until(process: subprocess.Popen, needle: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    fd = process.stdout.fileno()
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"never saw {needle!r}; got {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, f"stdout closed before {needle!r}: {process.stderr.read().decode()}"
            seen += chunk
    return seen


def _events(store: str, session_id: str) -> list:
    import asyncio

    async def read() -> list:
        opened = open_store(store)
        try:
            return await opened.read(session_id)
        finally:
            await opened.close()

    return asyncio.run(read())


# -- schema, demo, and the direct-to-store commands


def test_schema_prints_the_protocol():
    result = agent_host("schema")
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["methods"]) == set(METHOD_TABLE)


def test_demo_runs_a_whole_session_offline(tmp_path):
    store = tmp_path / "store"
    result = agent_host("demo", "--store", str(store))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("[end_turn]") == 3
    assert "changed greet.py" in out and "created test_greet.py" in out
    assert "deleted NOTES.md" in out
    assert (
        "restore to before 'Add a test for greet':\n  deleted test_greet.py\n"
        "  created NOTES.md\n  2 files (NOTES.md, test_greet.py), "
    ) in out
    # Checkpoints by their number and prompt, counts in messages (never seqs or events).
    assert "  2 · 'Add a test for greet'  changed: test_greet.py" in out
    assert re.search(r"test_greet.py\), \d+ messages removed\n", out), out
    assert re.search(r"  2 files and \d+ messages back\n", out), out
    assert "seq" not in out and "event" not in out
    files_lines = [line for line in out.splitlines() if line.startswith("  files:")]
    assert files_lines == [
        "  files: README.md, greet.py, test_greet.py",
        "  files: NOTES.md, README.md, greet.py",
        "  files: README.md, greet.py, test_greet.py",
    ]
    (info,) = [
        json.loads(line)
        for line in agent_host("sessions", "--store", str(store), "--json").stdout.splitlines()
    ]
    assert info["turns"] == 3
    assert info["title"] == "Add a docstring to greet.py"


async def test_sessions_lists_newest_first(tmp_path):
    store = open_store(tmp_path / "s")
    await store.append("older", [UserPrompt(text="first")])
    await store.append("newer", [UserPrompt(text="second")])
    result = agent_host("sessions", "--store", str(tmp_path / "s"))
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("newer") and lines[0].endswith("second")
    assert lines[1].startswith("older")


async def test_sessions_of_one_workspace(tmp_path):
    app, lib = tmp_path / "app", tmp_path / "lib"
    app.mkdir(), lib.mkdir()
    store = open_store(tmp_path / "s")
    await store.append("in-app", [SessionStarted(workspace=str(app)), UserPrompt(text="a")])
    await store.append("in-lib", [SessionStarted(workspace=str(lib)), UserPrompt(text="b")])
    listed = agent_host("sessions", "--store", str(tmp_path / "s"), "--workspace", ".", cwd=app)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["in-app"]
    as_json = agent_host("sessions", "--store", str(tmp_path / "s"), "--json")
    rows = {r["sessionId"]: r["workspace"] for r in map(json.loads, as_json.stdout.splitlines())}
    assert rows == {"in-app": str(app), "in-lib": str(lib)}


async def test_sessions_json_is_what_session_list_says(tmp_path):
    """Each line of ``sessions --json`` is the wire's SessionSummary, keys and values:
    a script reads ``sessionId`` from the CLI as an editor does from the server."""
    from agent_host.client import AgentClient
    from agent_host.rpc import methods

    app = tmp_path / "app"
    app.mkdir()
    store = open_store(tmp_path / "s")
    await store.append("one", [SessionStarted(workspace=str(app), title="T"), UserPrompt(text="a")])
    await store.append("two", [UserPrompt(text="b"), UserPrompt(text="c")])
    await store.close()
    as_json = agent_host("sessions", "--store", str(tmp_path / "s"), "--json")
    assert as_json.returncode == 0
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    async with AgentClient(store=str(tmp_path / "s"), workspace=app) as client:
        wire = (await client.request(methods.LIST, {}))["sessions"]
    assert rows == wire
    assert [list(r) for r in rows] == [list(w) for w in wire]  # the same order of keys, too
    assert [r["sessionId"] for r in rows] == ["two", "one"]
    assert "id" not in rows[0]


async def test_gc_removes_unreferenced_snapshots(tmp_path):
    store = open_store(f"sqlite://{tmp_path}/s.db")
    kept = await store.blobs.put(b"kept")
    await store.blobs.put(b"orphan")
    await store.append("s", [FileSnapshot(path="a", before=kept, after=None)])
    await store.close()
    result = agent_host("gc", "--store", f"sqlite://{tmp_path}/s.db", "--grace", "0")
    assert result.returncode == 0
    assert result.stdout.startswith("removed 1 snapshots")


def test_store_from_the_environment(tmp_path):
    env = {**os.environ, "AGENT_HOST_STORE": str(tmp_path / "s")}
    result = agent_host("sessions", env=env)
    assert result.returncode == 0 and result.stderr == "no sessions\n"


def test_errors_and_usage_have_distinct_exit_codes():
    bad = agent_host("sessions", "--store", "http://nowhere/x")
    assert bad.returncode == 1
    assert "unsupported store URL" in bad.stderr and "Traceback" not in bad.stderr
    assert agent_host().returncode == 2
    assert agent_host("no-such-command").returncode == 2
