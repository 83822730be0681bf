"""``agent-host acp`` in Emacs's agent-shell 0.74.3 (pinned, unmodified), started by
the tests: under ``emacs --batch`` and in a terminal (``emacs -nw`` in tmux, where
Emacs's questions show and wait), the edited file open in a buffer.

Each run plays scripted turns (tests/editors/agent_shell/driver.el) and checks what
a user would see: an agent's edit is one clean write -- no question from Emacs, the
buffer and the disk both hold the new text; the slash commands arrive; ``/rewind``
and ``/undo-rewind`` restore the file in the buffer and on disk; a user's edit is
kept and forcing works; a refused write fails the tool call; a missing key is named
in the shell. Every message the agent sends validates against the ACP v1 schema.
See agent_shell_harness.py for how Emacs and the agent are run.

Before the agent wrote an open file through the editor only, it wrote the disk first,
and Emacs found the file changed under its buffer and asked (batch mode: refused);
the open-file tests are what would catch that again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .agent_shell_harness import Run, find_emacs, find_tmux, play, unpack_agent_shell
from .conftest import STALL_WALL, STALLED_MODEL, stalled_model_env

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).resolve().parent / "agent_shell" / "agent-host-config.el"
COMMANDS = {"checkpoints", "rewind", "undo-rewind"}
MODES = [
    pytest.param(False, id="batch"),
    pytest.param(True, id="terminal"),
]


def write(content: str) -> dict:
    call = {"name": "write_file", "arguments": {"path": "a.txt", "content": content}}
    return {"tool_calls": [call]}


TWO_WRITES = [write("v1\n"), {"text": "Wrote v1."}, write("v2\n"), {"text": "Wrote v2."}]


@pytest.fixture(scope="module")
def emacs() -> str:
    return find_emacs()


@pytest.fixture(scope="module")
def lisp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpack_agent_shell(tmp_path_factory.mktemp("agent-shell"))


@pytest.fixture
def run_in(emacs: str, lisp: Path, tmp_path: Path):
    """``run_in(terminal, **play_args)``: one Emacs run (see harness.play)."""

    def start(terminal: bool, **kwargs) -> Run:
        if terminal:
            find_tmux()
        return play(emacs, lisp, tmp_path, terminal=terminal, **kwargs)

    return start


def clean(run: Run) -> None:
    """What every run must show: no driver failure, the slash commands arrived,
    every message the agent sent is valid ACP v1."""
    assert run.result["failure"] is None, run.result["failure"]
    assert COMMANDS <= set(run.result["commands"]), run.result["commands"]
    assert run.wire_problems() == []


def finished(turn: dict) -> list[str]:
    """The tool calls' final statuses in a turn."""
    last: dict[str, str] = {}
    for tool in turn["tools"]:
        last[tool["id"]] = tool["status"]
    return list(last.values())


# -- passing today: the file not open in a buffer, slash commands, the key


def test_slash_commands_arrive_and_rewind_round_trips_a_file_no_buffer_visits(run_in):
    # Closed before each turn, as a user who never opened it: agent-shell opens a
    # buffer for each fs/write_text_file, from the disk as it is then.
    close = {"close": "a.txt"}
    run = run_in(
        False,
        script=TWO_WRITES,
        open_files=(),
        steps=[
            {"prompt": "write v1"},
            close,
            {"prompt": "write v2"},
            {"prompt": "/checkpoints"},
            close,
            {"prompt": "/rewind {seq:2}"},
            close,
            {"prompt": "/undo-rewind"},
        ],
    )
    clean(run)
    turns = run.turns
    assert [t["stop"] for t in turns] == ["end_turn"] * 5
    assert run.file(0)[1] == "v1\n" and run.file(1)[1] == "v2\n"
    assert "'write v1'" in turns[2]["text"] and "'write v2'" in turns[2]["text"]
    assert turns[3]["text"].startswith("Rewound to just before 'write v2'")
    assert run.file(3) == ("v1\n", "v1\n")
    assert turns[4]["text"].startswith("Undid the last rewind")
    assert run.file(4) == ("v2\n", "v2\n")
    assert run.questions == []
    # the agent's slash commands, as agent-shell shows them
    assert "/rewind" in run.result["shell"] and "/undo-rewind" in run.result["shell"]


@pytest.mark.parametrize("terminal", MODES)
def test_a_missing_key_is_named_in_the_shell(run_in, terminal):
    run = run_in(
        terminal,
        model="openai/gpt-4o-mini",
        drop_env=("OPENAI_API_KEY",),
        open_files=(),
    )
    assert run.result["failure"] is None and not run.result["ready"]
    assert [e["code"] for e in run.result["errors"]] == [-32000]
    assert "OPENAI_API_KEY" in run.result["errors"][0]["message"]
    # what the user sees: the buffer's visible text, the terminal's screen
    shown = run.screen if terminal else run.result["shell"]
    assert "OPENAI_API_KEY" in shown, shown
    assert run.wire_problems() == []


@pytest.mark.exclusive
def test_a_stalled_model_is_reported_in_the_shell_within_the_limit(run_in, stalled_model):
    """Issue 23, finding 7: an endpoint that accepts and never answers. agent-shell
    shows the wait (the retry notice, in a "Thought" fold) and then the error naming
    the setting, within STALL_WALL of the prompt."""
    run = run_in(
        False,
        model=STALLED_MODEL,
        open_files=(),
        steps=[{"prompt": "hi"}],
        agent_env=stalled_model_env(stalled_model),
        step_timeout=STALL_WALL
        + 30,  # past the bound: a slow turn fails the assert, not the driver
    )
    assert run.result["failure"] is None, run.result["failure"]
    (turn,) = run.turns
    assert turn["seconds"] < STALL_WALL, turn["seconds"]
    (error,) = turn["errors"]
    url = stalled_model.url + "/v1"
    assert f"no answer from {url} within 1 s, 2 times" in error["message"], error
    assert "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT" in error["message"], error
    assert "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT" in run.result["shell"], run.result["shell"]
    # the wait reached the editor: the notice on the wire, and in the shell's fold
    notices = [
        m["params"]["update"]["content"]["text"]
        for m in run.requests("session/update")
        if m["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
    ]
    assert [
        n.startswith(f"no answer from {STALLED_MODEL} in 1 s; retry 1 of 1 in ") for n in notices
    ] == [True], notices
    assert "Thought" in run.result["shell"], run.result["shell"]  # the fold's label
    assert notices[0] in run.result["shell_all"], run.result["shell_all"]
    assert len(stalled_model.received) == 2
    assert run.wire_problems() == []


# -- the file open in a buffer: pending the editor-only writes


@pytest.mark.parametrize("terminal", MODES)
def test_an_agent_edit_of_an_open_file_is_one_clean_write(run_in, terminal):
    run = run_in(terminal, script=TWO_WRITES[:2], steps=[{"prompt": "write v1"}])
    clean(run)
    (turn,) = run.turns
    assert turn["stop"] == "end_turn" and finished(turn) == ["completed"]
    assert run.questions == []
    assert run.file(0) == ("v1\n", "v1\n")
    (written,) = run.requests("fs/write_text_file")
    assert written["params"]["content"] == "v1\n"
    assert "error" not in run.answer_to(written)
    assert not any(f["modified"] for f in run.result["files"])


@pytest.mark.parametrize("terminal", MODES)
def test_rewind_and_undo_restore_an_open_file(run_in, terminal):
    run = run_in(
        terminal,
        script=TWO_WRITES,
        steps=[
            {"prompt": "write v1"},
            {"prompt": "write v2"},
            {"prompt": "/checkpoints"},
            {"prompt": "/rewind {seq:2}"},
            {"prompt": "/undo-rewind"},
        ],
    )
    clean(run)
    assert run.questions == []
    assert run.file(1) == ("v2\n", "v2\n")
    assert run.turns[3]["text"].startswith("Rewound to just before 'write v2'")
    assert "restored 1 file (a.txt)" in run.turns[3]["text"]
    assert run.file(3) == ("v1\n", "v1\n")
    assert run.turns[4]["text"].startswith("Undid the last rewind: restored 1 file (a.txt)")
    assert run.file(4) == ("v2\n", "v2\n")
    for written in run.requests("fs/write_text_file"):
        assert "error" not in run.answer_to(written), run.answer_to(written)


@pytest.mark.parametrize("terminal", MODES)
def test_a_users_edit_is_kept_by_rewind_and_forcing_overwrites_it(run_in, terminal):
    run = run_in(
        terminal,
        script=TWO_WRITES,
        steps=[
            {"prompt": "write v1"},
            {"prompt": "write v2"},
            {"edit": "a.txt", "text": "mine\n"},  # typed in the buffer and saved
            {"prompt": "/checkpoints"},
            {"prompt": "/rewind {seq:2}"},
            # what the kept message says to type
            {"follow": "/rewind -?[0-9]+ --force"},
            {"edit": "a.txt", "text": "theirs\n"},
            {"prompt": "/undo-rewind"},
            {"follow": "/undo-rewind --force"},
        ],
    )
    clean(run)
    assert run.questions == []
    kept, forced, kept_undo, forced_undo = run.turns[3:]
    assert "a.txt" in kept["text"] and "--force" in kept["text"], kept["text"]
    assert run.file(3) == ("mine\n", "mine\n")
    assert forced["prompt"].endswith("--force")
    assert run.file(4) == ("v1\n", "v1\n"), forced["text"]
    assert "a.txt" in kept_undo["text"] and "--force" in kept_undo["text"], kept_undo["text"]
    assert run.file(5) == ("theirs\n", "theirs\n")
    # the undo puts back what the forced rewind overwrote
    assert run.file(6) == ("mine\n", "mine\n"), forced_undo["text"]


def test_a_write_emacs_refuses_fails_the_tool_call(run_in):
    # A save hook that quits, as a user answering C-g to a save: agent-shell
    # answers fs/write_text_file with an error.
    run = run_in(
        False,
        script=[write("v1\n"), {"text": "The write failed."}],
        steps=[{"refuse_saves": "a.txt"}, {"prompt": "write v1"}],
    )
    clean(run)
    (turn,) = run.turns
    assert finished(turn) == ["failed"]
    assert run.file(0)[1] == "start\n"
    (written,) = run.requests("fs/write_text_file")
    assert "error" in run.answer_to(written)
    failed = [
        m["params"]["update"]
        for m in run.requests("session/update")
        if m["params"]["update"].get("status") == "failed"
    ]
    assert failed, "no failed tool_call_update"
    assert run.questions == []


# -- the documented configuration is the tested one


def test_docs_give_the_configuration_the_tests_load():
    config = CONFIG.read_text()
    start = config.index("(require 'agent-shell)")
    end = config.index(";;; agent-host-config.el ends here")
    assert config[start:end].strip() in (REPO / "docs" / "acp.md").read_text()
