"""The Neovim plugin: what each turn changed, and a restore previewed before it writes
(issue 25; changes.lua): changed files in the chat opening diff tabs, checkpoints
numbered with their prompts and their quickfix entries at the changed line,
:AgentDiff, :AgentUndoFile, the restore preview float and the restore it previews.

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import pytest

from .neovim_harness import run_scenario

A = "x = 1\ny = 1\nz = 1\n"
A1 = "x = 1\ny = 1\nz = 2\n"  # after the first turn
A2 = "x = 1\ny = 2\nz = 2\n"  # after the second
MINE = A2 + "# mine\n"


def _edit(path: str, old: str, new: str) -> dict:
    return {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}}


def _write(path: str, content: str) -> dict:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


@pytest.fixture(scope="module")
def changed(nvim, tmp_path_factory):
    steps = [
        {"text": "Editing a.", "tool_calls": [_edit("a.py", "z = 1", "z = 2")]},
        {"text": "Done 1."},
        {
            "text": "Three files.",
            "tool_calls": [
                _edit("a.py", "y = 1", "y = 2"),
                _write("b.py", "b = 2\n"),
                _write("new.txt", "new\n"),
            ],
        },
        {"text": "Done 2."},
    ]
    files = {"a.py": A, "b.py": "b = 1\n", "c.py": "c = 1\n"}
    return run_scenario(nvim, tmp_path_factory.mktemp("changes"), "changes", steps, files)


def _lines(text: str) -> list[str]:
    return text.removesuffix("\n").split("\n")


def test_changed_files_are_listed_after_the_turn_and_enter_opens_a_diff(changed):
    lines = changed["chat"].split("\n")
    heading = "Changed files (<CR> on one opens its diff, U undoes its change):"
    first, header = [i for i, line in enumerate(lines) if line == heading]
    assert sorted(lines[header + 1 : header + 4]) == [
        "  ~ added new.txt (+1 −0)",
        "  ~ modified a.py (+1 −1)",
        "  ~ modified b.py (+1 −1)",
    ]
    # the first turn listed its one file too, before the second turn began
    assert lines[first + 1] == "  ~ modified a.py (+1 −1)"
    assert lines[first + 2 :].index("second: touch three files") < header - first
    tab = changed["chat_diff"]
    assert tab["path"] == "a.py" and tab["tab"] is True
    assert tab["left"]["lines"] == _lines(A1) and tab["right"]["lines"] == _lines(A2)
    assert tab["left"]["diff"] is True and tab["right"]["diff"] is True


def test_checkpoints_are_numbered_with_their_prompt_and_quickfix_goes_to_the_changed_line(
    changed,
):
    first, second = changed["labels"]
    assert first.startswith("1 · first: edit a  ") and first.endswith("[a.py]")
    assert second.startswith("2 · second: touch three files  ")
    entries = {
        (e["file"], e["text"].split(":")[0]): e["lnum"] for e in changed["checkpoints_quickfix"]
    }
    assert entries[("a.py", "checkpoint 1")] == 3  # z, the third line
    assert entries[("a.py", "checkpoint 2")] == 2  # y, the second
    assert entries[("b.py", "checkpoint 2")] == 1


def test_agentdiff_opens_a_tab_per_file_of_the_last_or_a_given_turn(changed):
    last = {t["path"]: t for t in changed["diff_last_turn"]}
    assert sorted(last) == ["a.py", "b.py", "new.txt"]
    assert last["new.txt"]["left"]["lines"] == [""] and last["new.txt"]["right"]["lines"] == ["new"]
    assert last["b.py"]["right"]["lines"] == ["b = 2"]
    assert all(t["left"]["diff"] and t["right"]["diff"] for t in last.values())
    [turn1] = changed["diff_turn_1"]
    assert turn1["path"] == "a.py"
    assert (turn1["left"]["lines"], turn1["right"]["lines"]) == (_lines(A), _lines(A1))


def test_agentdiff_bang_lists_the_hunks_since_a_checkpoint_in_quickfix(changed):
    items = changed["diff_since_1_quickfix"]
    assert {(e["file"], e["lnum"]) for e in items} == {("a.py", 2), ("b.py", 1), ("new.txt", 1)}
    [a] = [e for e in items if e["file"] == "a.py"]
    assert a["text"] == "modified +y = 2"


def test_undo_file_leaves_the_other_files_of_the_turn_alone(changed):
    turned = {"a.py": A2, "b.py": "b = 2\n", "new.txt": "new\n"}
    undone = {"a.py": A2, "b.py": "b = 1\n", "new.txt": "new\n"}
    assert changed["after_turns"] == turned
    # U on the file's line in the chat, then :AgentUndoRestore takes it back
    assert changed["after_undo_key"] == undone
    assert changed["undo_key_result"]["restoredFiles"] == ["b.py"]
    assert changed["after_undo_restore"] == turned
    # :AgentUndoFile b.py
    assert changed["after_undo_file"] == undone
    assert changed["undo_file_result"]["restoredFiles"] == ["b.py"]


def test_the_preview_writes_nothing_and_names_the_conflict(changed):
    assert changed["preview_float"] is True and changed["preview_current"] is True
    assert changed["disk_while_previewing"] == changed["before_restore"]
    files = {f["path"]: f for f in changed["preview_files"]}
    assert files["a.py"]["conflict"] is True
    assert files["new.txt"]["action"] == "deleted"
    lines = changed["preview_lines"]
    assert lines[0] == "Restore to just before 2 · second: touch three files (files only)"
    [a_line] = [line for line in lines if "a.py" in line]
    assert a_line.startswith("[ ] modified a.py") and "! changed since the agent wrote it" in a_line
    assert "[x] deleted new.txt (+0 −1)" in lines
    # u: the agent's text against the user's, d: the disk against what would be written
    yours = changed["yours"]
    assert yours["left"]["lines"] == _lines(A2) and yours["right"]["lines"] == _lines(MINE)
    shown = changed["preview_diff"]
    assert shown["left"]["lines"] == ["new"] and shown["right"]["lines"] == [""]


def test_a_restore_after_the_preview_writes_exactly_what_it_showed(changed):
    chosen = changed["preview_lines_chosen"]
    assert any(line.startswith("[x] modified a.py") for line in chosen)
    assert "[ ] deleted new.txt (+0 −1)" in chosen
    assert changed["restore_opts"]["paths"] == ["a.py"] and changed["restore_opts"]["force"]
    after, before = changed["after_restore"], changed["before_restore"]
    for file in changed["preview_files"]:
        path = file["path"]
        if path == "a.py":  # ticked: what the preview said it would write
            assert after[path] == file["after"] == A1
        else:  # unticked: as it was
            assert after[path] == before[path]
    assert after["new.txt"] == "new\n"
    note = "⟲ restored to just before 2 (files only, overwriting changed files): 1 file (a.py)"
    assert note in changed["chat_after_restore"]


def test_cancelling_the_preview_writes_nothing(changed):
    assert changed["second_preview_files"] > 0
    assert changed["preview_cancelled"] is True
    assert changed["cancel_wrote_nothing"] is True
