"""Two editor windows on one store: two ``agent-host serve`` processes, one session.

Every append names the head it expects, so the second writer either reloads the
log first (a new turn) or gets a clean checkpoint conflict (-32002) -- never a
fork. The log itself is read back from the store in this process and checked.
"""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException

from agent_host.session import events as ev
from agent_host.session import open_store
from agent_host.session.conversation import to_messages

from .conftest import request, wait_until

CHECKPOINT_CONFLICT = -32002
TURN_IN_PROGRESS = -32006

pytestmark = pytest.mark.slow


async def read_log(store_dir, session_id: str) -> list[ev.Event]:
    store = open_store(str(store_dir))
    try:
        return await store.read(session_id)
    finally:
        await store.close()


def assert_log_whole(events: list[ev.Event]) -> None:
    """Seqs 1..N with no gap or repeat, one session start, every tool call answered."""
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [type(e) for e in events].count(ev.SessionStarted) == 1
    calls = [e.call_id for e in events if type(e) is ev.ToolCall]
    results = [e.call_id for e in events if type(e) is ev.ToolResult]
    assert len(calls) == len(set(calls)), f"a call id repeats: {calls}"
    assert sorted(results) == sorted(calls), f"calls {calls}, results {results}"
    for call in (e for e in events if type(e) is ev.ToolCall):
        result = next(e for e in events if type(e) is ev.ToolResult and e.call_id == call.call_id)
        assert result.seq > call.seq


def assert_messages_whole(messages: list[dict]) -> None:
    open_calls: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            open_calls.remove(message["tool_call_id"])
        else:
            assert not open_calls, f"unanswered calls {open_calls} before {message}"
            open_calls += [c["id"] for c in message.get("tool_calls") or []]
    assert not open_calls


STEPS = [
    {"text": "Answer one."},
    {
        "text": "Writing.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "b.txt", "content": "from B\n"}}
        ],
    },
    {"text": "Answer two."},
    {"text": "Answer three."},
]


async def test_turns_alternate_between_two_servers(agents, store_dir, workspace):
    a = await agents(STEPS)
    b = await agents(STEPS)

    one = await request(a, "session/send", {"prompt": "turn one"})
    sid = one["sessionId"]
    assert one["text"] == "Answer one."

    resumed = await request(b, "session/resume", {"sessionId": sid})
    assert resumed["turns"] == 1
    assert resumed["head"] == len(await read_log(store_dir, sid))
    two = await request(b, "session/send", {"sessionId": sid, "prompt": "turn two"})
    # B played the step after A's answer: it saw A's turn in the log.
    assert two["text"].startswith("Writing.") and two["text"].endswith("Answer two.")
    assert (workspace / "b.txt").read_text() == "from B\n"

    # A still holds the log as it was after turn one; it reloads before appending.
    three = await request(a, "session/send", {"sessionId": sid, "prompt": "turn three"})
    assert three["text"] == "Answer three."
    assert one["checkpoint"] < two["checkpoint"] < three["checkpoint"]

    expected = [
        ("user", "turn one"),
        ("assistant", "Answer one."),
        ("user", "turn two"),
        ("assistant", "Writing."),
        ("tool", None),
        ("assistant", "Answer two."),
        ("user", "turn three"),
        ("assistant", "Answer three."),
    ]
    messages = (await request(a, "session/history", {"sessionId": sid}))["messages"]
    assert [(m["role"], m["content"] if m["role"] != "tool" else None) for m in messages] == (
        expected
    )
    assert_messages_whole(messages)
    checkpoints = (await request(a, "session/checkpoints", {"sessionId": sid}))["checkpoints"]
    assert [c["seq"] for c in checkpoints] == [
        one["checkpoint"],
        two["checkpoint"],
        three["checkpoint"],
    ]
    assert checkpoints[1]["files"] == ["b.txt"]

    events = await read_log(store_dir, sid)
    assert to_messages(events) == messages
    assert_log_whole(events)
    prompts = [e.text for e in events if type(e) is ev.UserPrompt]
    assert prompts == ["turn one", "turn two", "turn three"]
    # Each turn is closed before the next begins.
    kinds = [type(e) for e in events if type(e) in (ev.UserPrompt, ev.TurnEnd)]
    assert kinds == [ev.UserPrompt, ev.TurnEnd] * 3
    listed = (await request(b, "session/list", {}))["sessions"]
    assert [(s["sessionId"], s["turns"], s["head"]) for s in listed] == [(sid, 3, len(events))]


async def test_reads_on_one_server_see_the_other_servers_turns(agents, store_dir):
    a = await agents(STEPS[:1] + [{"text": "Second."}])
    b = await agents(STEPS)
    sid = (await request(a, "session/send", {"prompt": "one"}))["sessionId"]
    assert len((await request(b, "session/history", {"sessionId": sid}))["messages"]) == 2
    await request(a, "session/send", {"sessionId": sid, "prompt": "two"})
    events = await read_log(store_dir, sid)

    problems = []
    history = (await request(b, "session/history", {"sessionId": sid}))["messages"]
    if history != to_messages(events):
        problems.append(f"history: {[m['content'] for m in history]}")
    resumed = await request(b, "session/resume", {"sessionId": sid})
    if (resumed["head"], resumed["turns"]) != (len(events), 2):
        problems.append(f"resume: {resumed} but the log has {len(events)} events, 2 turns")
    checkpoints = (await request(b, "session/checkpoints", {"sessionId": sid}))["checkpoints"]
    if len(checkpoints) != 2:
        problems.append(f"checkpoints: {checkpoints}")
    assert not problems, "server B shows a stale session:\n" + "\n".join(problems)


SLOW_STEPS = [
    {
        "text": "thinking slowly about it all",
        "delay_ms": 250,
        "tool_calls": [{"name": "write_file", "arguments": {"path": "race.txt", "content": "x\n"}}],
    },
    {"text": "Done."},
    {"text": "After the race."},
    {"text": "And again."},
]


async def test_simultaneous_turns_conflict_cleanly(agents, store_dir):
    a = await agents(SLOW_STEPS)
    b = await agents(SLOW_STEPS)
    sid = (await request(a, "session/new", {"title": "race"}))["sessionId"]

    async def send(client, prompt):
        try:
            return await request(client, "session/send", {"sessionId": sid, "prompt": prompt})
        except JsonRpcException as exc:
            return exc

    outcomes = await asyncio.gather(send(a, "from A"), send(b, "from B"))
    won = [o for o in outcomes if not isinstance(o, JsonRpcException)]
    lost = [o for o in outcomes if isinstance(o, JsonRpcException)]
    assert won, f"neither turn finished: {outcomes}"
    for exc in lost:
        # Refused up front while the other window's turn holds the session (the usual
        # case), or -- had they raced past that -- a clean conflict, never a fork.
        assert exc.code in (TURN_IN_PROGRESS, CHECKPOINT_CONFLICT), (exc.code, exc.message)
        assert sid in exc.message
        assert exc.data["error"] in ("TurnInProgress", "CheckpointConflictError")
    for result in won:
        assert result["stopReason"] == "end_turn"

    events = await read_log(store_dir, sid)
    assert_log_whole(events)
    assert [type(e) for e in events].count(ev.TurnEnd) == len(won)

    # Whoever lost retries, as the error says, and then sees the session as logged.
    retry = a if isinstance(outcomes[0], JsonRpcException) else b
    again = await request(retry, "session/send", {"sessionId": sid, "prompt": "retry"})
    assert again["stopReason"] == "end_turn"
    events = await read_log(store_dir, sid)
    assert_log_whole(events)
    history = (await request(retry, "session/history", {"sessionId": sid}))["messages"]
    assert history == to_messages(events)
    assert_messages_whole(history)
    assert history[-2]["content"] == "retry"


async def test_a_turn_cut_off_mid_tool_leaves_no_unanswered_call(agents, store_dir):
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 1.5"}}]},
        {"text": "Slept."},
        {"text": "B's answer."},
    ]
    a = await agents(steps)
    b = await agents(steps)
    sid = (await request(a, "session/new", {}))["sessionId"]
    slow = asyncio.ensure_future(
        request(a, "session/send", {"sessionId": sid, "prompt": "sleep on A"})
    )
    await wait_until(lambda: any(e["kind"] == "tool_call" for e in a.events), what="A's call")
    try:
        outcome_b = await request(b, "session/send", {"sessionId": sid, "prompt": "meanwhile on B"})
    except JsonRpcException as exc:
        outcome_b = exc
    # B is refused while A's turn holds the session; A's turn is untouched.
    assert isinstance(outcome_b, JsonRpcException) and outcome_b.code == TURN_IN_PROGRESS
    try:
        outcome_a = await slow
    except JsonRpcException as exc:
        outcome_a = exc
    # One of the two may lose cleanly (a conflict, or B refused while A's turn is open) ...
    for outcome in (outcome_a, outcome_b):
        if isinstance(outcome, JsonRpcException):
            assert outcome.code in (CHECKPOINT_CONFLICT, TURN_IN_PROGRESS), outcome
    # ... but the log stays whole: every call answered, every turn closed.
    events = await read_log(store_dir, sid)
    assert_log_whole(events)
    prompts = [e.seq for e in events if type(e) is ev.UserPrompt]
    ends = [e.seq for e in events if type(e) is ev.TurnEnd]
    assert len(ends) == len(prompts), "a turn was left open in the log"


async def test_delete_from_another_server_waits_for_the_running_turn(agents, store_dir):
    steps = [{"text": "thinking for a while", "delay_ms": 1500}]
    a = await agents(steps)
    b = await agents(steps)
    sid = (await request(a, "session/new", {"title": "busy"}))["sessionId"]
    turn = asyncio.ensure_future(
        request(a, "session/send", {"sessionId": sid, "prompt": "take your time"})
    )
    for _ in range(200):  # until A's turn has its prompt in the log
        if any(type(e) is ev.UserPrompt for e in await read_log(store_dir, sid)):
            break
        await asyncio.sleep(0.02)
    with pytest.raises(JsonRpcException) as refused:
        await request(b, "session/delete", {"sessionId": sid})
    assert refused.value.code == TURN_IN_PROGRESS, refused.value.message
    assert (await turn)["stopReason"] == "end_turn"  # the turn was not disturbed
    assert_log_whole(await read_log(store_dir, sid))
    await request(b, "session/delete", {"sessionId": sid})  # once it is over
    assert await read_log(store_dir, sid) == []
