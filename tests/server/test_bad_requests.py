"""Well-framed requests the server must refuse cleanly -- bad params, bad session ids,
unknown methods -- and a model failure reported as an actionable error.

The client is the plain-JSON pytest-lsp client (conftest.start_agent).
"""

from __future__ import annotations

import re

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from .conftest import request
from .wire import INVALID_PARAMS, assert_clean_error

METHOD_NOT_FOUND = -32601
MODEL_ERROR = -32007
SESSION_METHODS_WITH_ID = [
    "session/resume",
    "session/history",
    "session/delete",
    "session/checkpoints",
    "session/undoRestore",
    "session/compact",
]

BAD_PARAMS: list[tuple[str, object, str]] = [
    # (method, params, a field the message must name, camelCase as on the wire)
    ("session/new", {"title": 5}, "title"),
    ("session/new", {"model": ["x"]}, "model"),
    ("session/send", {}, "prompt"),
    ("session/send", {"prompt": 5}, "prompt"),
    ("session/send", {"prompt": "   "}, "prompt"),
    ("session/send", {"prompt": "hi", "sessionId": 7}, "sessionId"),
    ("session/send", {"prompt": "hi", "session_id": "s", "sessionId": False}, "sessionId"),
    ("session/send", {"prompt": "hi", "context": {"text": "x"}}, "context"),
    ("session/send", {"prompt": "hi", "context": [{"uri": "file:///x"}]}, "context[0].text"),
    ("session/send", {"prompt": "hi", "context": [{"text": 1}]}, "context[0].text"),
    ("session/list", {"limit": "10"}, "limit"),
    ("session/list", {"limit": 1.5}, "limit"),
    ("session/list", {"cursor": 3}, "cursor"),
    ("session/list", {"cursor": "not-a-cursor"}, "cursor"),
    ("session/resume", {}, "sessionId"),
    ("session/resume", {"session_id": "snake"}, "sessionId"),
    ("session/history", {"sessionId": None}, "sessionId"),
    ("session/history", {"sessionId": "s", "limit": "all"}, "limit"),
    ("session/history", {"sessionId": "s", "limit": True}, "limit"),
    ("session/delete", {"sessionId": 1}, "sessionId"),
    ("session/checkpoints", {"sessionId": {"id": "s"}}, "sessionId"),
    ("session/restore", {"sessionId": "s"}, "seq"),
    ("session/restore", {"sessionId": "s", "seq": "3"}, "seq"),
    ("session/restore", {"sessionId": "s", "seq": 3, "files": "yes"}, "files"),
    ("session/restore", {"sessionId": "s", "seq": 3, "conversation": 0}, "conversation"),
    ("session/undoRestore", {"sessionId": []}, "sessionId"),
    ("session/compact", {}, "sessionId"),
    ("session/compact", {"sessionId": "s", "instructions": 5}, "instructions"),
]


async def test_invalid_params_are_32602_naming_the_field(agents):
    client = await agents([{"text": "ok"}])
    problems = []
    for method, params, field in BAD_PARAMS:
        try:
            result = await request(client, method, params, timeout=10)
        except JsonRpcException as exc:
            if exc.code != INVALID_PARAMS or field not in exc.message:
                problems.append(f"{method} {params}: {exc.code} {exc.message!r}")
            assert_clean_error(exc)
        else:
            problems.append(f"{method} {params}: no error, got {result!r}")
    # params that are not an object at all
    methods = ["session/new", "session/send", "session/list", "session/restore"]
    for method in methods + SESSION_METHODS_WITH_ID:
        for params in ([], ["s"], "s", 5, True):
            try:
                await request(client, method, params, timeout=10)
            except JsonRpcException as exc:
                if exc.code != INVALID_PARAMS or "params" not in exc.message:
                    problems.append(f"{method} {params!r}: {exc.code} {exc.message!r}")
                assert_clean_error(exc)
            else:
                problems.append(f"{method} {params!r}: no error")
    assert not problems, "\n".join(problems)
    # Omitted params are an empty object: fine where nothing is required.
    assert (await request(client, "session/list", None))["sessions"] == []
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "session/resume", None)
    assert caught.value.code == INVALID_PARAMS and "sessionId" in caught.value.message
    # Nothing above changed anything.
    assert (await request(client, "session/list", {}))["sessions"] == []


# Not ids under the one rule (session/store/ids.py); path-like ids are ids, kept
# inside the store: tests/server/test_session_ids.py.
BAD_SESSION_IDS = ["", "x" * 513, "é" * 513, "s\x00", "😀" * 256 + "a"]


async def test_bad_session_ids_are_invalid_params(agents, tmp_path, store_dir):
    client = await agents([{"text": "ok"}])
    problems = []
    for session_id in BAD_SESSION_IDS:
        calls = [(m, {"sessionId": session_id}) for m in SESSION_METHODS_WITH_ID]
        calls += [
            ("session/send", {"sessionId": session_id, "prompt": "hi"}),
            ("session/restore", {"sessionId": session_id, "seq": 1}),
        ]
        for method, params in calls:
            try:
                await request(client, method, params, timeout=10)
            except JsonRpcException as exc:
                if exc.code != INVALID_PARAMS:
                    problems.append(f"{method} {session_id!r}: {exc.code} {exc.message!r}")
                assert_clean_error(exc)
            else:
                problems.append(f"{method} {session_id!r}: accepted")
        client.protocol.notify("session/cancel", {"sessionId": session_id})
    assert not problems, "\n".join(problems)
    assert (await request(client, "session/list", {}))["sessions"] == []
    # Nothing was written next to (or above) the store, nor in the workspace.
    assert {p.name for p in tmp_path.iterdir()} <= {"ws", "store", "script-0.json"}
    assert [p.name for p in (tmp_path / "ws").iterdir()] == ["a.py"]


async def test_an_empty_session_id_is_invalid_not_the_current_session(agents):
    client = await agents([{"text": "private answer"}])
    other = (await request(client, "session/send", {"prompt": "secret"}))["sessionId"]
    await request(client, "session/resume", {"sessionId": other})
    problems = []
    for method in ("session/history", "session/checkpoints", "session/compact"):
        try:
            result = await request(client, method, {"sessionId": ""}, timeout=10)
        except JsonRpcException as exc:
            if exc.code != INVALID_PARAMS:
                problems.append(f"{method}: {exc.code} {exc.message!r}")
        else:
            problems.append(f"{method}: acted on {other}: {result!r}")
    assert not problems, "\n".join(problems)


async def test_unknown_methods_and_notifications(agents):
    client = await agents([{"text": "ok"}])
    for method in ("session/unknown", "session/Send", "nope", "$/unknownRequest"):
        with pytest.raises(JsonRpcException) as caught:
            await request(client, method, {}, timeout=10)
        assert caught.value.code == METHOD_NOT_FOUND, method
        assert_clean_error(caught.value)
    for method, params in [
        ("session/unknownNotification", {"x": 1}),
        ("$/setTrace", lsp.SetTraceParams(lsp.TraceValue.Verbose)),
        ("session/cancel", {"sessionId": "no-such-session"}),
        ("session/cancel", {"sessionId": 5}),
        ("session/cancel", []),
        ("session/cancel", None),
        ("session/event", {"sessionId": "s", "kind": "x", "data": {}}),
        ("$/cancelRequest", lsp.CancelParams(id="no-such-request")),
    ]:
        client.protocol.notify(method, params)
    # Still here, still answering, nothing logged as a server-side failure to the client.
    result = await request(client, "session/send", {"prompt": "still there?"})
    assert result["stopReason"] == "end_turn"
    assert client._server.returncode is None


async def test_model_error_is_actionable(agents, tmp_path):
    client = await agents([{"text": "The only step."}])
    first = await request(client, "session/send", {"prompt": "one"})
    sid = first["sessionId"]
    client.events.clear()
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "session/send", {"sessionId": sid, "prompt": "two"})
    error = caught.value
    assert error.code == MODEL_ERROR
    assert_clean_error(error)
    # Says what failed and what to look at: the script, its size, the step asked for.
    assert "exhausted" in error.message
    assert str(tmp_path / "script-0.json") in error.message
    assert re.search(r"\b1 steps?\b", error.message) and "step 1" in error.message
    assert error.data == {"error": "ScriptExhausted"}
    # The failed turn was closed in the log, and the session still works.
    assert client.events[0]["kind"] == "user_prompt"
    assert client.events[-1]["kind"] == "turn_end"
    assert client.events[-1]["data"]["stopReason"] == "error"
    history = await request(client, "session/history", {"sessionId": sid})
    assert [m["content"] for m in history["messages"]] == ["one", "The only step.", "two"]
    assert (await request(client, "session/resume", {"sessionId": sid}))["turns"] == 2


async def test_a_missing_key_names_the_variable_in_the_message(
    tmp_path, workspace, store_dir, monkeypatch
):
    from agent_host.session.providers.registry import PROVIDER_KEYS

    from .conftest import start_agent, stop_agent

    for name in PROVIDER_KEYS:  # the server inherits the test's environment
        monkeypatch.delenv(name, raising=False)
    client = await start_agent(root=workspace, store=store_dir, model="openai/gpt-4.1-mini")
    try:
        with pytest.raises(JsonRpcException) as caught:
            await request(client, "session/send", {"prompt": "hi"})
    finally:
        await stop_agent(client)
    error = caught.value
    assert error.code == MODEL_ERROR
    assert_clean_error(error)
    assert error.message.startswith(
        "No API key for openai/gpt-4.1-mini: set OPENAI_API_KEY in the environment "
        "agent-host starts in"
    ), error.message
