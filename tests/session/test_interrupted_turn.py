"""A turn whose holder died, or lost its lease, mid-turn is closed by the next turn
in the session before it starts: the log reads as that turn, closed, then the next.
On every store (the PostgreSQL lease kill itself: store/test_postgres_leases.py)."""

from __future__ import annotations

import json

from agent_host.session import events as ev
from agent_host.session.conversation import INTERRUPTED
from agent_host.session.host import AgentHost

SID = "s1"


def script(tmp_path, steps: list[dict]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


def host(store, tmp_path, steps: list[dict]) -> AgentHost:
    workdir = tmp_path / "ws"
    workdir.mkdir(exist_ok=True)
    return AgentHost(store=store, model=script(tmp_path, steps), workdir=workdir, auto_compact=None)


def kinds(events: list[ev.Event]) -> list[str]:
    return [type(e).type for e in events]


async def test_the_next_turn_closes_a_turn_its_holder_never_closed(store, tmp_path):
    # What a holder that crashed (or was fenced off) leaves: a call never answered.
    await store.append(
        SID,
        [
            ev.SessionStarted(workspace=str(tmp_path / "ws")),
            ev.UserPrompt(text="cut short"),
            ev.AssistantMessage(text="half"),
            ev.ToolCall(call_id="c1", name="run_command", arguments={"command": "true"}),
            ev.ToolCall(call_id="c2", name="read_file", arguments={"path": "a"}),
            ev.ToolResult(call_id="c2", output="a's text"),
        ],
    )
    h = host(store, tmp_path, [{"text": "unused"}, {"text": "next answer"}])
    try:
        assert (await h.send("next", session_id=SID)).stop_reason == "end_turn"
    finally:
        await h.close()
    events = await store.read(SID)
    assert kinds(events[6:]) == [
        "tool_result",
        "turn_end",
        "user_prompt",
        "assistant_message",
        "usage",
        "turn_end",
    ]
    closing, end = events[6], events[7]
    assert (closing.call_id, closing.output, closing.is_error) == ("c1", INTERRUPTED, True)
    assert end.stop_reason == "error"


async def test_a_session_resumed_from_its_snapshot_closes_it_too(store, tmp_path):
    steps = [{"text": f"answer {n}"} for n in range(6)]
    first = host(store, tmp_path, steps)
    try:
        await first.send("first", session_id=SID)
    finally:
        await first.close()
    ended = await store.head(SID)
    # Cut short right after its prompt, then after a call: both are closed.
    for cut in (
        [],
        [ev.AssistantMessage(text="half"), ev.ToolCall(call_id="c1", name="x", arguments={})],
    ):
        await store.append(SID, [ev.UserPrompt(text="cut short"), *cut])
        later = host(store, tmp_path, steps)  # a new host: resumes from the snapshot
        try:
            await later.send("again", session_id=SID, model=later.model)
        finally:
            await later.close()
        events = (await store.read(SID))[ended:]
        closed_at = 1 + len(cut) + (1 if cut else 0)
        assert kinds(events[: closed_at + 1])[-1] == "turn_end", kinds(events)
        assert events[closed_at].stop_reason == "error"
        assert type(events[closed_at + 1]) is ev.UserPrompt
        ended = await store.head(SID)


async def test_a_closed_turn_and_items_the_sdk_added_are_left_as_they_are(store, tmp_path):
    steps = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    h = host(store, tmp_path, steps)
    try:
        await h.send("first", session_id=SID)
        await h.send("second", session_id=SID)
        await h.add_items([{"role": "user", "content": "an item"}], session_id=SID)
        await h.send("third", session_id=SID)
    finally:
        await h.close()
    events = await store.read(SID)
    ends = [e.stop_reason for e in events if type(e) is ev.TurnEnd]
    assert ends == ["end_turn"] * 3
