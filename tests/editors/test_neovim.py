"""The Neovim plugin: an agent edit, a restore, a server restart (edit_restore.lua).

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import re

import pytest

from .neovim_harness import _store_session, run_scenario

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


def test_an_unknown_cost_shows_as_a_dash_not_zero(edited):
    assert edited["footer_unknown_cost"] == "— end_turn · 3 in / 4 out tokens · $— (session $—)"
    assert edited["status_unknown_cost"] == "agent-host: idle · $—"


def test_checkpoints_listed_with_their_files(edited):
    [checkpoint] = edited["checkpoints"]
    assert checkpoint["seq"] == edited["send_result"]["checkpoint"]
    assert checkpoint["prompt"] == "make x two"
    assert checkpoint["files"] == ["a.py"]
    # the entry goes to the changed line (the edit is on line 1 here)
    assert edited["quickfix"] == [{"file": "a.py", "lnum": 1, "text": "checkpoint 1: make x two"}]


def test_restore_brings_back_unsaved_text_and_the_file_bytes(edited):
    picked = [q for q in edited["questions"] if q["kind"] == "agent_host.checkpoint"]
    assert picked and picked[0]["items"][0].startswith("1 · make x two  ")
    modes = [q for q in edited["questions"] if q["kind"] == "agent_host.restore_mode"]
    assert modes[0]["items"] == ["files and conversation", "files only", "conversation only"]
    # the preview float came first and listed the file (confirmed with <CR>)
    preview = edited["preview"]
    assert preview["float"] is True
    assert preview["lines"][0] == "Restore to just before 1 · make x two (files and conversation)"
    # the disk holds "x = 2" and the saved note; the restore writes "x = 1" back
    assert [line for line in preview["lines"] if line.startswith("[x] ")] == [
        "[x] modified a.py (+1 −2)"
    ]
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
