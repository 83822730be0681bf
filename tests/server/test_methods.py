"""Every ``session/*`` method end to end: a real ``agent-host serve`` over stdio.

The servers run the scripted model (see providers/scripted.py): a turn plays step
N, where N is the number of assistant messages already in the session, so a turn
with tool calls uses one step per model call.
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from .conftest import request, wait_until

SESSION_NOT_FOUND = -32001
INVALID_PARAMS = -32602
TURN_IN_PROGRESS = -32006
REQUEST_CANCELLED = -32800
PROMPTED_HEAD = 5
"""A session's head after one prompt answered "ok" (its opening and the turn's events)."""


def write(path: str, content: str) -> dict:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def kinds(events: list[dict], session_id: str | None = None) -> list[str]:
    return [e["kind"] for e in events if session_id is None or e["sessionId"] == session_id]


def assert_whole(messages: list[dict]) -> None:
    """Every assistant tool call is followed by exactly one tool result, in order."""
    open_calls: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, f"result without a call: {message}"
            open_calls.remove(message["tool_call_id"])
            continue
        assert not open_calls, f"calls {open_calls} have no result before {message}"
        open_calls += [call["id"] for call in message.get("tool_calls") or []]
    assert not open_calls, f"calls {open_calls} have no result"


async def log_of(client, session_id: str) -> list[dict]:
    return (await request(client, "session/history", {"sessionId": session_id}))["messages"]


# -- session/new, send, list, resume, history


async def test_new_send_resume_history(agents, workspace):
    client = await agents(
        [
            {"text": "First answer.", "usage": {"input_tokens": 11, "output_tokens": 3}},
            {"text": "Second answer.", "usage": {"input_tokens": 20, "output_tokens": 4}},
        ]
    )
    created = await request(client, "session/new", {"title": "Refactor the parser"})
    sid = created["sessionId"]
    assert isinstance(sid, str) and sid

    # Issue 23: a session is stored, and listed, from its first prompt; with its title.
    unprompted = await request(client, "session/list", {})
    assert unprompted["sessions"] == []

    first = await request(client, "session/send", {"sessionId": sid, "prompt": "one"})
    listed = await request(client, "session/list", {})
    assert [(s["sessionId"], s["title"]) for s in listed["sessions"]] == [
        (sid, "Refactor the parser")
    ]
    # $/progress: the client advertised window.workDoneProgress, so the send made a
    # token (window/workDoneProgress/create) and reported begin ... end on it.
    assert len(client.progress_reports) == 1
    (reports,) = client.progress_reports.values()
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin) and "one" in reports[0].title
    assert isinstance(reports[-1], lsp.WorkDoneProgressEnd)
    assert [r.kind for r in reports].count("begin") == [r.kind for r in reports].count("end") == 1
    assert set(first) == {
        "sessionId",
        "checkpoint",
        "stopReason",
        "text",
        "usage",
        "cost",
        "totalCost",
    }
    assert first["sessionId"] == sid
    assert first["stopReason"] == "end_turn"
    assert first["text"] == "First answer."
    assert first["usage"] == {"inputTokens": 11, "outputTokens": 3}
    assert isinstance(first["checkpoint"], int) and first["checkpoint"] > 1
    assert isinstance(first["cost"], float) and isinstance(first["totalCost"], float)
    assert first["totalCost"] >= first["cost"] >= 0

    second = await request(client, "session/send", {"sessionId": sid, "prompt": "two"})
    assert second["text"] == "Second answer."
    assert second["usage"] == {"inputTokens": 20, "outputTokens": 4}
    assert second["checkpoint"] > first["checkpoint"]
    assert second["totalCost"] == pytest.approx(first["cost"] + second["cost"])

    resumed = await request(client, "session/resume", {"sessionId": sid})
    assert resumed["sessionId"] == sid
    assert resumed["turns"] == 2
    summary = (await request(client, "session/list", {}))["sessions"][0]
    assert resumed["head"] == summary["head"] > second["checkpoint"]
    assert summary["turns"] == 2 and summary["title"] == "Refactor the parser"

    history = await request(client, "session/history", {"sessionId": sid})
    assert history["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "Second answer."},
    ]
    limited = await request(client, "session/history", {"sessionId": sid, "limit": 2})
    assert limited["messages"] == history["messages"][-2:]

    # Without a sessionId, send starts a new session.
    fresh = await request(client, "session/send", {"prompt": "hello"})
    assert fresh["sessionId"] != sid
    assert fresh["text"] == "First answer."  # step 0 again: a new session


async def test_list_pagination_and_delete(agents, workspace):
    client = await agents([{"text": "ok"}] * 4)
    ids = []
    for title in ("oldest", "middle", "newest"):
        ids.append((await request(client, "session/new", {"title": title}))["sessionId"])
        # Issue 23: listed from the first prompt on (an unprompted one is not).
        await request(client, "session/send", {"sessionId": ids[-1], "prompt": title})
        await asyncio.sleep(0.01)  # distinct update times
    everything = await request(client, "session/list", {})
    assert [s["title"] for s in everything["sessions"]] == ["newest", "middle", "oldest"]
    assert [s["sessionId"] for s in everything["sessions"]] == ids[::-1]
    assert everything["nextCursor"] is None
    for summary in everything["sessions"]:
        assert set(summary) == {
            "sessionId",
            "title",
            "createdAt",
            "updatedAt",
            "turns",
            "head",
            "workspace",
        }
        assert summary["turns"] == 1 and summary["head"] == PROMPTED_HEAD
        assert summary["workspace"] == str(workspace.resolve())

    first = await request(client, "session/list", {"limit": 2})
    assert [s["title"] for s in first["sessions"]] == ["newest", "middle"]
    assert isinstance(first["nextCursor"], str)
    rest = await request(client, "session/list", {"limit": 2, "cursor": first["nextCursor"]})
    assert [s["title"] for s in rest["sessions"]] == ["oldest"]
    assert rest["nextCursor"] is None

    # A turn moves a session to the front.
    await request(client, "session/send", {"sessionId": ids[0], "prompt": "bump"})
    again = await request(client, "session/list", {"limit": 1})
    assert [s["sessionId"] for s in again["sessions"]] == [ids[0]]

    # session/delete: gone from the list; a second delete is session-not-found.
    assert await request(client, "session/delete", {"sessionId": ids[0]}) is None
    listed = await request(client, "session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == ids[:0:-1]
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "session/delete", {"sessionId": ids[0]})
    assert caught.value.code == SESSION_NOT_FOUND
    assert ids[0] in caught.value.message


async def test_list_by_workspace(agents, workspace, tmp_path):
    """Two editor windows on two projects share one store; each can list its own."""
    other = tmp_path / "other-project"
    other.mkdir()
    here = await agents([{"text": "ok"}])
    there = await agents([{"text": "ok"}], root=other)
    mine = (await request(here, "session/send", {"prompt": "here"}))["sessionId"]
    theirs = (await request(there, "session/send", {"prompt": "there"}))["sessionId"]
    listed = await request(here, "session/list", {})
    assert {s["sessionId"] for s in listed["sessions"]} == {mine, theirs}
    for folder in (str(workspace), workspace.as_uri(), f"{workspace}/../{workspace.name}", "."):
        only = await request(here, "session/list", {"workspace": folder})
        assert [s["sessionId"] for s in only["sessions"]] == [mine]
    only = await request(here, "session/list", {"workspace": str(other)})
    assert [(s["sessionId"], s["workspace"]) for s in only["sessions"]] == [
        (theirs, str(other.resolve()))
    ]
    nothing = await request(here, "session/list", {"workspace": str(tmp_path)})
    assert nothing == {"sessions": [], "nextCursor": None}
    with pytest.raises(JsonRpcException) as caught:
        await request(here, "session/list", {"workspace": ""})
    assert caught.value.code == INVALID_PARAMS and "workspace" in caught.value.message


# -- checkpoints, restore, undo, compact, delete


async def test_checkpoints_restore_and_undo(agents, workspace):
    client = await agents(
        [
            {"text": "Plain turn."},
            {
                "text": "Writing.",
                "tool_calls": [write("new.txt", "new\n"), write("a.py", "print('b')\n")],
            },
            {"text": "Both written."},
        ]
    )
    first = await request(client, "session/send", {"prompt": "just talk"})
    sid = first["sessionId"]
    second = await request(client, "session/send", {"sessionId": sid, "prompt": "write two"})
    assert (workspace / "new.txt").read_text() == "new\n"
    assert (workspace / "a.py").read_text() == "print('b')\n"
    head = (await request(client, "session/resume", {"sessionId": sid}))["head"]

    full = await log_of(client, sid)
    assert [m["role"] for m in full] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "tool",
    ] + ["assistant"]
    # history's limit never starts on a tool result: the last 3 messages would, so
    # the assistant message holding the calls comes along.
    limited = await request(client, "session/history", {"sessionId": sid, "limit": 3})
    assert limited["messages"] == full[3:]
    assert (await request(client, "session/history", {"sessionId": sid, "limit": 0}))[
        "messages"
    ] == []

    found = (await request(client, "session/checkpoints", {"sessionId": sid}))["checkpoints"]
    assert [(c["seq"], c["prompt"], c["files"]) for c in found] == [
        (first["checkpoint"], "just talk", []),
        (second["checkpoint"], "write two", ["new.txt", "a.py"]),
    ]
    for checkpoint in found:
        assert set(checkpoint) == {
            "seq",
            "prompt",
            "createdAt",
            "files",
            "fromCommands",
            "notCaptured",
            "externalTools",
            "unconfined",
            "ordinal",
            "label",
        }
        assert "T" in checkpoint["createdAt"]  # ISO 8601
        assert checkpoint["unconfined"] == []  # the file tools run nothing
    assert [(c["ordinal"], c["label"]) for c in found] == [
        (1, "1 · just talk"),
        (2, "2 · write two"),
    ]

    restored = await request(
        client, "session/restore", {"sessionId": sid, "seq": second["checkpoint"]}
    )
    assert sorted(restored["restoredFiles"]) == ["a.py", "new.txt"]
    assert restored["removedEvents"] == head - second["checkpoint"] + 1
    assert restored["messagesRemoved"] == 3  # the prompt and the two answers
    assert not (workspace / "new.txt").exists()
    assert (workspace / "a.py").read_text() == "print('a')\n"
    assert [m["content"] for m in await log_of(client, sid)] == ["just talk", "Plain turn."]

    undone = await request(client, "session/undoRestore", {"sessionId": sid})
    assert sorted(undone["restoredFiles"]) == ["a.py", "new.txt"]
    assert undone["restoredEvents"] == restored["removedEvents"]
    assert (workspace / "new.txt").read_text() == "new\n"
    assert (workspace / "a.py").read_text() == "print('b')\n"
    messages = await log_of(client, sid)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"] + [
        "tool",
        "tool",
        "assistant",
    ]
    assert_whole(messages)


async def test_compact_shrinks_the_conversation(agents):
    long_answer = " ".join(f"word{i}" for i in range(400))
    client = await agents([{"text": long_answer}, {"text": "Short."}])
    sid = (await request(client, "session/send", {"prompt": "talk a lot"}))["sessionId"]
    await request(client, "session/send", {"sessionId": sid, "prompt": "and now?"})
    client.events.clear()
    done = await request(client, "session/compact", {"sessionId": sid, "instructions": "brief"})
    assert isinstance(done["before"], int) and isinstance(done["after"], int)
    assert done["before"] > done["after"] > 0 and done["compacted"] is True
    stages = [e["data"]["stage"] for e in client.events if e["kind"] == "compaction_progress"]
    assert stages == ["started", "summarising", "done"]
    again = await request(client, "session/compact", {"sessionId": sid})
    # Nothing new since: nothing is written, and the answer says so.
    assert again["compacted"] is False and again["before"] == again["after"]
    messages = await log_of(client, sid)
    assert messages[0]["role"] == "user" and "Summary" in messages[0]["content"]
    assert messages[-2:] == [
        {"role": "user", "content": "and now?"},
        {"role": "assistant", "content": "Short."},
    ]


# -- streaming and progress


async def test_events_stream_in_order_before_the_response(agents):
    client = await agents(
        [
            {"text": "Let me write the file for you.", "tool_calls": [write("new.txt", "hi\n")]},
            {"text": "All done, the file is there."},
        ]
    )
    answered = asyncio.get_running_loop().create_future()
    future = client.protocol.send_request("session/send", {"prompt": "write it"})
    # Runs in the client's reader as the response is read: marks its place in the trace.
    future.add_done_callback(lambda _: client.trace.append(("response", None)))
    future.add_done_callback(
        lambda f: answered.get_loop().call_soon_threadsafe(answered.set_result, f.result())
    )
    result = await asyncio.wait_for(answered, 30)
    sid = result["sessionId"]

    assert client.trace[-1] == ("response", None), "events arrived after the response"
    events = [params for what, params in client.trace if what == "event"]
    assert all(e["sessionId"] == sid for e in events)
    order = kinds(events)
    # A new session's log opens with session_started; the turn itself opens with the prompt.
    if order[0] == "session_started":
        events, order = events[1:], order[1:]
    assert order[0] == "user_prompt"
    assert order[-1] == "turn_end"
    assert events[-1]["data"]["stopReason"] == "end_turn"
    first_message = order.index("assistant_message")
    assert "text_delta" in order[:first_message]
    tool_call, snapshot, tool_result = (
        order.index("tool_call"),
        order.index("file_snapshot"),
        order.index("tool_result"),
    )
    assert first_message < tool_call < snapshot < tool_result
    second_message = order.index("assistant_message", tool_result)
    assert "text_delta" in order[tool_result:second_message]
    deltas = [e["data"]["text"] for e in events[:first_message] if e["kind"] == "text_delta"]
    assert "".join(deltas) == events[first_message]["data"]["text"]
    assert events[0]["data"]["text"] == "write it"
    assert events[0]["data"]["seq"] == result["checkpoint"]
    assert events[snapshot]["data"]["path"] == "new.txt"
    assert events[tool_call]["data"]["callId"] == events[tool_result]["data"]["callId"]
    # Event data is camelCase on the wire, like everything else.
    assert "isError" in events[tool_result]["data"]
    assert all("_" not in key for e in events for key in e["data"])


# -- cancel


SLOW_TOOL = [
    {
        "text": "Running it.",
        # Ends only if stopped: a send that answers at all was ended by the cancel.
        # (Not a bound on how soon it answers, which a loaded machine stretches.)
        "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 3600"}}],
    },
    {"text": "After the cancel."},
]
CANCEL_BOUND = 120.0
"""How long a cancelled send may take to answer: a cancel that does not stop the
command fails the test after this, instead of after the command's hour."""
UNDER_LOAD = 60.0
"""How long to wait for a turn to reach its tool call (on CI, four test processes
share two cores)."""


async def answered_despite_the_command(send: asyncio.Future) -> dict:
    """The cancelled send's answer; fails if it waits on the hour-long command."""
    try:
        return await asyncio.wait_for(send, CANCEL_BOUND)
    except TimeoutError:
        pytest.fail(f"no answer {CANCEL_BOUND}s after the cancel: the command was not stopped")


async def test_cancel_by_notification_and_by_cancel_request(agents):
    """Both routes, each in its own session on one server (each starts at step 0)."""
    client = await agents(SLOW_TOOL)

    # (a) session/cancel while the command runs: the send answers stopReason cancelled.
    sid = (await request(client, "session/new", {}))["sessionId"]
    send = asyncio.ensure_future(
        request(client, "session/send", {"sessionId": sid, "prompt": "run it"}, CANCEL_BOUND)
    )
    await wait_until(
        lambda: "tool_call" in kinds(client.events, sid), UNDER_LOAD, what="the tool call"
    )
    client.protocol.notify("session/cancel", {"sessionId": sid})
    result = await answered_despite_the_command(send)
    assert result["stopReason"] == "cancelled"
    assert result["text"] == "Running it."
    assert kinds(client.events, sid)[-1] == "turn_end"
    assert client.events[-1]["data"]["stopReason"] == "cancelled"
    messages = await log_of(client, sid)
    assert_whole(messages)
    assert "cancelled" in messages[-1]["content"]  # the call's result says why
    after = await request(client, "session/send", {"sessionId": sid, "prompt": "again"})
    assert after["stopReason"] == "end_turn" and after["text"] == "After the cancel."
    assert_whole(await log_of(client, sid))

    # (b) $/cancelRequest on the pending send: the request fails with RequestCancelled.
    # pygls's client sends no $/cancelRequest when a future is cancelled, so it is sent
    # as an editor does, naming the pending request's id.
    other = (await request(client, "session/new", {}))["sessionId"]
    pending = asyncio.ensure_future(
        client.protocol.send_request_async(
            "session/send", {"sessionId": other, "prompt": "run it"}, msg_id="send-to-cancel"
        )
    )
    await wait_until(
        lambda: "tool_call" in kinds(client.events, other), UNDER_LOAD, what="the tool call"
    )
    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="send-to-cancel"))
    with pytest.raises(JsonRpcException) as caught:
        await answered_despite_the_command(pending)
    assert caught.value.code == REQUEST_CANCELLED
    # The turn was closed in the log, not abandoned.
    await wait_until(lambda: kinds(client.events, other)[-1] == "turn_end", what="turn_end")
    assert client.events[-1]["data"]["stopReason"] == "cancelled"
    assert_whole(await log_of(client, other))
    after = await request(client, "session/send", {"sessionId": other, "prompt": "again"})
    assert after["stopReason"] == "end_turn" and after["text"] == "After the cancel."
    assert_whole(await log_of(client, other))


# -- permission


async def test_permission_reject_once_leaves_the_file_untouched(agents, workspace):
    client = await agents(
        [
            {"tool_calls": [write("a.py", "print('hacked')\n"), write("new.txt", "x\n")]},
            {"text": "I was not allowed."},
        ],
        approval="ask",
        permission=lambda params: "reject_once",
    )
    result = await request(client, "session/send", {"prompt": "overwrite"})
    assert result["stopReason"] == "end_turn"
    assert (workspace / "a.py").read_text() == "print('a')\n"
    assert not (workspace / "new.txt").exists()

    asked = client.permission_requests
    assert [p["tool"] for p in asked] == ["write_file", "write_file"]  # reject_once: asked again
    first = asked[0]
    assert first["sessionId"] == result["sessionId"]
    assert first["kind"] == "edit"
    assert first["arguments"] == {"path": "a.py", "content": "print('hacked')\n"}
    assert "-print('a')" in first["diff"] and "+print('hacked')" in first["diff"]
    assert set(first["options"]) == {"allow_once", "allow_always", "reject_once", "reject_always"}

    results = [e["data"] for e in client.events if e["kind"] == "tool_result"]
    assert len(results) == 2
    assert all(r["isError"] and "permission denied" in r["output"].lower() for r in results)
    assert "file_snapshot" not in kinds(client.events)
    # The permission request came before the call's result, while the turn ran.
    order = [what if what == "permission" else p["kind"] for what, p in client.trace]
    assert order.index("permission") < order.index("tool_result")


async def test_permission_allow_always_asks_once_per_tool(agents, workspace):
    answers = iter(["allow_always", "allow_once"])
    client = await agents(
        [
            {"tool_calls": [write("one.txt", "1\n"), write("two.txt", "2\n")]},
            {"text": "Two files."},
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {
                            "path": "a.py",
                            "old_string": "print('a')",
                            "new_string": "print('edited')",
                        },
                    }
                ]
            },
            {"text": "Edited."},
        ],
        approval="ask",
        permission=lambda params: next(answers),
    )
    first = await request(client, "session/send", {"prompt": "two writes"})
    assert [p["tool"] for p in client.permission_requests] == ["write_file"]
    assert (workspace / "one.txt").read_text() == "1\n"
    assert (workspace / "two.txt").read_text() == "2\n"

    # allow_always covers write_file only: an edit is asked about, with its diff.
    sid = first["sessionId"]
    await request(client, "session/send", {"sessionId": sid, "prompt": "edit"})
    assert [p["tool"] for p in client.permission_requests] == ["write_file", "edit_file"]
    edit = client.permission_requests[1]
    assert edit["kind"] == "edit"
    assert edit["arguments"]["old_string"] == "print('a')"
    assert "-print('a')" in edit["diff"] and "+print('edited')" in edit["diff"]
    assert (workspace / "a.py").read_text() == "print('edited')\n"


# -- one turn at a time per session


async def test_one_turn_at_a_time_per_session_but_sessions_run_concurrently(agents):
    # This client does not advertise window.workDoneProgress: no progress is made.
    client = await agents(
        # two chunks, 400 ms before each: the turn runs ~0.8 s, room for the refusals
        [{"text": "slow answer in several little pieces", "delay_ms": 400}],
        work_done_progress=False,
    )
    sid = (await request(client, "session/new", {}))["sessionId"]
    first = asyncio.ensure_future(
        request(client, "session/send", {"sessionId": sid, "prompt": "first"})
    )
    await wait_until(lambda: "user_prompt" in kinds(client.events), what="the first turn")
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "session/send", {"sessionId": sid, "prompt": "second"})
    assert caught.value.code == TURN_IN_PROGRESS
    assert sid in caught.value.message
    # Other session-changing methods refuse too, rather than cut the running turn.
    for method, params in [
        ("session/restore", {"sessionId": sid, "seq": 2}),
        ("session/compact", {"sessionId": sid}),
        ("session/delete", {"sessionId": sid}),
    ]:
        with pytest.raises(JsonRpcException) as caught:
            await request(client, method, params)
        assert caught.value.code == TURN_IN_PROGRESS, method
    assert (await first)["stopReason"] == "end_turn"
    messages = await log_of(client, sid)
    assert [m["content"] for m in messages] == ["first", "slow answer in several little pieces"]

    # Two different sessions at once: both succeed, and they overlapped.
    a, b = [(await request(client, "session/new", {}))["sessionId"] for _ in range(2)]
    client.events.clear()
    results = await asyncio.gather(
        request(client, "session/send", {"sessionId": a, "prompt": "to a"}),
        request(client, "session/send", {"sessionId": b, "prompt": "to b"}),
    )
    assert [r["sessionId"] for r in results] == [a, b]
    assert all(r["stopReason"] == "end_turn" for r in results)
    order = [(e["sessionId"], e["kind"]) for e in client.events]
    first_end = min(order.index((a, "turn_end")), order.index((b, "turn_end")))
    assert order.index((a, "user_prompt")) < first_end
    assert order.index((b, "user_prompt")) < first_end
    assert client.progress_reports == {}


# -- fork and close


async def test_fork_up_to_a_checkpoint_and_close(agents, workspace):
    client = await agents(
        [
            {"text": "Plain turn."},
            {"text": "Writing.", "tool_calls": [write("new.txt", "new\n")]},
            {"text": "Written."},
            {"text": "More."},
        ]
    )
    first = await request(client, "session/send", {"prompt": "just talk"})
    sid = first["sessionId"]
    second = await request(client, "session/send", {"sessionId": sid, "prompt": "write one"})
    fork = await request(
        client, "session/fork", {"sessionId": sid, "seq": second["checkpoint"], "title": "try 2"}
    )
    fid = fork["sessionId"]
    assert fid != sid
    forked = await request(client, "session/history", {"sessionId": fid})
    assert [m["content"] for m in forked["messages"]] == ["just talk", "Plain turn."]
    whole = await request(client, "session/fork", {"sessionId": sid})
    source = await request(client, "session/history", {"sessionId": sid})
    assert (await request(client, "session/history", {"sessionId": whole["sessionId"]})) == source
    listed = {s["sessionId"]: s for s in (await request(client, "session/list", {}))["sessions"]}
    assert listed[fid]["title"] == "try 2" and set(listed) == {sid, fid, whole["sessionId"]}

    with pytest.raises(JsonRpcException) as bad:
        await request(client, "session/fork", {"sessionId": sid, "seq": 3})
    assert bad.value.code == -32003

    assert await request(client, "session/close", {"sessionId": sid}) is None
    # Closed here, still stored: the next send goes on with it.
    again = await request(client, "session/send", {"sessionId": sid, "prompt": "more"})
    assert again["stopReason"] == "end_turn"
