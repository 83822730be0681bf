"""The Neovim plugin: permissions, context, compaction, history and new sessions
(permission.lua).

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import pytest

from .neovim_harness import run_scenario

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
        {"text": "Fresh answer."},
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
    # the refused call is named; the engine's refusal is in the fold under it
    assert "✗ rejected: run_command: echo hi > ran.txt\n    │ Permission denied" in chat
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
    # one line for one compaction: its stages went to the statusline
    assert "compaction" not in asked["chat_after_compact"].split("## Agent")[-1]
    assert asked["chat_after_compact"].count("compacted: ~") == 1
    assert asked["history"][0]["content"].startswith("Summary of the conversation so far")
    assert "## Summary" in asked["history_chat"]
    assert asked["history"][-1] == {"role": "assistant", "content": "Second answer."}
    new = asked["new_session"]
    assert new["new"] != new["old"]
    assert asked["chat_after_new"] == "# Session " + new["new"]
    assert asked["sessions"][0]["sessionId"] == new["new"]
    assert asked["sessions"][0]["title"] == "a fresh start"


def test_a_new_session_is_listed_from_its_first_prompt_and_picked_on_top_before(asked):
    """Issue 23: session/new stores nothing; session/list has the session from its
    first prompt on. :AgentSessions shows the current one on top before that, and
    once listed it is there once."""
    new = asked["new_session"]["new"]
    assert new not in [s["sessionId"] for s in asked["sessions_before_prompt"]]
    before = asked["picker_before_prompt"]["items"]
    assert before[0] == f"a fresh start  (current, new: stored from its first prompt)  {new}"
    assert [i for i in before if new in i] == before[:1]
    after = asked["picker_after_prompt"]["items"]
    assert after[0].startswith("a fresh start  (1 turn, ") and after[0].endswith(new)
    assert [i for i in after if new in i] == after[:1]


def test_closing_a_session_before_its_first_prompt_says_nothing_was_stored(asked):
    assert "it had no prompt, so nothing of it was stored" in asked["closed_unprompted_chat"]
