"""The Neovim plugin: cancelling a turn (cancel.lua), and quitting Neovim during
one (quit.lua).

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import pytest

from .neovim_harness import run_scenario

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
