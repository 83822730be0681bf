"""The Neovim plugin: restore conflicts (conflicts.lua).

A file the user changed after the agent's turn is left by :AgentRestore, which
names it and says how to overwrite it; :AgentUndoRestore then :AgentRestore!
overwrite it; an undo leaves a file changed since the restore wrote it. Also the
checkpoint label and restore notes of paths shell commands changed.

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import pytest

from .neovim_harness import run_scenario

MINE = "x = 3  # mine\n"


@pytest.fixture(scope="module")
def conflicts(nvim, tmp_path_factory):
    calls = [
        {"name": "write_file", "arguments": {"path": "a.py", "content": "x = 2\n"}},
        {"name": "write_file", "arguments": {"path": "b.py", "content": "y = 2\n"}},
    ]
    steps = [{"text": "Both.", "tool_calls": calls}, {"text": "Done."}]
    files = {"a.py": "x = 1\n", "b.py": "y = 1\n"}
    return run_scenario(nvim, tmp_path_factory.mktemp("conflicts"), "conflicts", steps, files)


def _warnings(step):
    return [n["msg"] for n in step["notified"] if n["level"] == 3]  # vim.log.levels.WARN


def test_restore_leaves_the_users_edit_and_says_how_to_overwrite_it(conflicts):
    assert conflicts["after_send"] == {"a": "x = 2\n", "b": "y = 2\n", "lines": ["x = 2"]}
    step = conflicts["restored"]
    assert step["result"]["conflicts"] == ["a.py"]
    assert step["result"]["restoredFiles"] == ["b.py"]
    assert (step["a"], step["b"]) == (MINE, "y = 1\n")
    assert step["lines"] == ["x = 3  # mine"] and step["modified"] is False
    conflict = "1 file changed since the agent last wrote it and was left as it is: a.py"
    hint = "to overwrite it: :AgentUndoRestore, then :AgentRestore! 1 both"
    assert f"  ! {conflict}\n    {hint}" in step["chat"]
    assert _warnings(step) == [f"agent-host: {conflict}\n    {hint}"]


def test_undo_then_restore_bang_overwrites_it(conflicts):
    undone = conflicts["undone"]
    assert undone["result"]["conflicts"] == []
    assert (undone["a"], undone["b"]) == (MINE, "y = 2\n")
    forced = conflicts["forced"]
    assert forced["result"]["conflicts"] == []
    assert sorted(forced["result"]["restoredFiles"]) == ["a.py", "b.py"]
    assert (forced["a"], forced["b"]) == ("x = 1\n", "y = 1\n")
    assert forced["lines"] == ["x = 1"] and forced["modified"] is False
    done = (
        "⟲ restored to just before 1 (files and conversation, overwriting changed files):"
        " 2 files (a.py, b.py), 3 messages removed"
    )
    assert done in forced["chat"]
    assert _warnings(forced) == []


def test_undo_leaves_a_file_changed_since_the_restore_and_brings_back_the_users_edit(conflicts):
    step = conflicts["undone_again"]
    assert step["result"]["conflicts"] == ["b.py"]
    # force kept the user's a.py: the undo brings it back; b.py, changed since, is left
    assert (step["a"], step["b"]) == (MINE, "y = 5  # mine\n")
    assert step["lines"] == ["x = 3  # mine"]
    note = "1 file changed since the restore wrote it and was left as it is: b.py"
    assert f"  ! {note}" in step["chat"]
    assert "to overwrite" not in step["chat"].split("restore undone")[-1]
    assert _warnings(step) == [f"agent-host: {note}"]


def test_command_changed_and_not_captured_paths_are_marked(conflicts):
    assert conflicts["label"] == (
        "2 · run the generator  2026-01-01 10:00 "
        "[a.py; by commands: gen.txt; not captured: node_modules/x.js]"
    )
    notes = conflicts["not_captured_notes"]
    assert [n["text"] for n in notes] == [
        "⟲ restored to just before 2 (files only): 1 file (gen.txt)",
        "  · 2 paths changed through commands but were not captured (ignored, or over the size"
        " cap), so they were not restored: node_modules/x.js, big.bin",
    ]


def test_what_ran_without_the_sandbox_is_marked_and_warned_of_on_restore(conflicts):
    assert conflicts["label_unconfined"] == (
        "3 · install it  2026-01-01 10:00 "
        "[by commands: gen.txt; MCP tools: mcp__fs__write_file; without the sandbox: make install]"
    )
    # everything confined: the MCP tool is listed, no outside changes are
    assert conflicts["label_confined_mcp"] == (
        "4 · write with mcp  2026-01-01 10:00 [MCP tools: mcp__fs__write_file]"
    )
    notes = conflicts["unconfined_notes"]
    assert [n["text"] for n in notes] == [
        "⟲ restored to just before 3: 1 file (gen.txt)",
        "  ! ran without the sandbox: make install; what they changed outside the workspace"
        " was not undone",
    ]
