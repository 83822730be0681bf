"""The Neovim plugin: :AgentFork and :AgentClose (fork_close.lua).

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import pytest

from .neovim_harness import run_scenario

LONG = " ".join(f"word{i}" for i in range(40))


@pytest.fixture(scope="module")
def forked(nvim, tmp_path_factory):
    # the scripted model plays the step numbered by the assistant messages already in
    # the session: a fork with one of them goes on with step 1
    steps = [
        {"text": "Answer 1."},
        {"text": "Answer 2."},
        {"text": "Answer 3."},
        {"text": LONG, "delay_ms": 150},
    ]
    return run_scenario(nvim, tmp_path_factory.mktemp("fork"), "fork_close", steps)


FIRST_TURN = [["user", "first question"], ["assistant", "Answer 1."]]
SOURCE = [*FIRST_TURN, ["user", "second question"], ["assistant", "Answer 2."]]


def test_fork_picks_a_checkpoint_or_the_whole_conversation(forked):
    pickers = [q for q in forked["questions"] if q["kind"] == "agent_host.checkpoint"]
    assert len(pickers) == 2
    first = pickers[0]
    assert first["prompt"] == "agent-host: fork with the conversation before"
    assert [i.split("  ")[0] for i in first["items"]] == [
        "1 · first question",
        "2 · second question",
        "whole conversation",
    ]
    assert "first question" in first["items"][0] and "second question" in first["items"][1]
    assert first["chosen"] == first["items"][1]
    assert pickers[1]["chosen"] == "whole conversation"
    assert len(pickers[1]["items"]) == 3  # the fork's own two checkpoints, and the whole


def test_the_fork_from_a_checkpoint_is_current_with_the_conversation_before_it(forked):
    fork1, source = forked["fork1"], forked["source"]
    assert fork1 != source
    assert forked["fork1_said"] == FIRST_TURN
    assert forked["source_said"] == SOURCE, "the source is untouched"
    chat = forked["fork1_chat"]
    assert chat.startswith(f"# Session {fork1}\n")
    assert "## You\nfirst question" in chat and "Answer 1." in chat
    assert "second question" not in chat
    assert forked["fork1_message"] == (
        f"agent-host: forked {source} (before checkpoint 2) into {fork1}"
    )
    # the next prompt went to the fork
    assert forked["fork1_turn_session"] == fork1
    assert forked["fork1_said_after"] == [
        *FIRST_TURN,
        ["user", "a question in the fork"],
        ["assistant", "Answer 2."],
    ]


def test_the_whole_fork_has_all_of_it(forked):
    fork2 = forked["fork2"]
    assert fork2 not in (forked["fork1"], forked["source"])
    assert forked["fork2_said"] == forked["fork1_said_after"]
    assert forked["fork2_message"] == (
        f"agent-host: forked {forked['fork1']} (the whole conversation) into {fork2}"
    )


def test_a_fork_at_no_checkpoint_is_an_error_and_the_session_stays(forked):
    # the command takes a checkpoint's number as listed; there is no 999th
    message = "agent-host: no checkpoint 999 (:AgentCheckpoints lists them)"
    assert forked["bad_fork_message"] == message
    assert forked["bad_fork_session"] == forked["fork2"]
    assert forked["usage_message"] == "agent-host: usage: :AgentFork [N|all]"


def test_close_clears_the_chat_and_the_next_prompt_starts_a_new_session(forked):
    fork2 = forked["fork2"]
    assert forked["closed_chat"] == (
        f"Closed session {fork2} (it stays stored: :AgentSessions resumes it)."
        " The next :AgentSend starts a new session."
    )
    assert forked["closed_message"] == (
        f"agent-host: closed {fork2}; it stays stored (:AgentSessions resumes it)"
    )
    assert forked["closed_status"] == "agent-host: idle"
    assert forked["close_nothing_message"].startswith("agent-host: no session yet")
    after = forked["after_close"]
    assert after["session"] not in (fork2, forked["fork1"], forked["source"])
    assert after["result"]["text"] == "Answer 1."
    # the note of the close stays above the new session's first turn
    assert after["chat"].startswith(forked["closed_chat"] + "\n\n## You\nafter the close\n")


def test_a_closed_session_is_resumed_and_takes_prompts(forked):
    result = forked["resumed_result"]
    assert result["sessionId"] == forked["fork2"]
    assert result["stopReason"] == "end_turn"
    assert result["text"] == "Answer 3."


def test_close_during_a_turn_cancels_it(forked):
    assert forked["closing_session"] == forked["fork2"]
    assert forked["closing_status"].startswith("agent-host: cancelling")
    slow = forked["slow"]
    # the turn's answer (cancelled) comes before the close's, or after it (then it
    # belongs to the closed session and is dropped)
    assert slow["err"] is None
    assert slow["result"] is None or slow["result"]["stopReason"] == "cancelled"
    assert forked["closed_running_status"] == "agent-host: idle"
    assert forked["closed_running_chat"].startswith(f"Closed session {forked['fork2']} ")
    said = forked["closed_running_said"]
    assert said[-2] == ["user", "count slowly"]
    assert said[-1][0] == "assistant"
    assert said[-1][1] and LONG.startswith(said[-1][1]) and said[-1][1] != LONG
