"""The Neovim plugin: reading a turn back (issue 25; review.lua): folded tool output,
rejected calls named, the statusline's tool, the current session marked, the cost
after a resume.

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import pytest

from .neovim_harness import run_scenario


@pytest.fixture(scope="module")
def reviewed(nvim, tmp_path_factory):
    steps = [
        {
            "text": "Two commands.",
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": "printf 'one\\ntwo\\nthree\\n'"}},
                {"name": "run_command", "arguments": {"command": "echo two > b.txt"}},
            ],
        },
        {"text": "Done."},
    ]
    return run_scenario(nvim, tmp_path_factory.mktemp("review"), "review", steps)


def test_long_output_is_a_closed_fold_that_enter_opens(reviewed):
    assert reviewed["summary_line"].startswith("  ✓ one (+")
    before, after = reviewed["fold_before"], reviewed["fold_after"]
    # closed, starting on the summary line, which it shows as it is
    assert before["closed_at"] > 0
    assert before["shown"] == reviewed["summary_line"]
    # it holds the whole output
    folded = [line.removeprefix("    │ ") for line in reviewed["fold_lines"]]
    assert folded[:3] == ["one", "two", "three"]
    assert after["closed_at"] == -1


def test_a_rejected_call_is_named(reviewed):
    assert reviewed["ran_rejected"] is False
    assert "  ✗ rejected: run_command: echo two > b.txt" in reviewed["chat"].split("\n")


def test_statusline_names_the_tool_allowed_to_run(reviewed):
    assert "agent-host: tool run_command" in reviewed["statuses"]
    assert "agent-host: tool" not in reviewed["statuses"]
    assert "agent-host: permission?" in reviewed["statuses"]


def test_sessions_marks_the_current_one(reviewed):
    [item] = reviewed["sessions_items"]
    assert item.startswith("run two commands  (1 turn, ")
    assert item.endswith(", current)  " + reviewed["session_id"])


def test_cost_is_kept_after_a_resume(reviewed):
    assert reviewed["status_after_turn"] == "agent-host: idle · $0.0000"
    assert reviewed["status_after_resume"] == "agent-host: idle · $0.0000"
