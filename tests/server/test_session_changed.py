"""A server holding a session on a shared PostgreSQL store hears another host's
appends (LISTEN/NOTIFY) and tells its editor: ``session/event`` kind
``session_changed``, with no polling."""

from __future__ import annotations

import asyncio
import time

from agent_host.session import open_store
from agent_host.session.events import AssistantMessage, UserPrompt

from ..pg_server import postgres_backend
from .conftest import write_script
from .wire import RawServer


def changes(server: RawServer, session_id: str) -> list[dict]:
    return [
        m["params"]["data"]
        for m in server.messages
        if m.get("method") == "session/event"
        and m["params"]["kind"] == "session_changed"
        and m["params"]["sessionId"] == session_id
    ]


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_another_hosts_append_reaches_the_editor(tmp_path, workspace, pg_database):
    url = postgres_backend(pg_database.create()).url
    model = write_script(tmp_path / "script.json", [{"text": "ok"}] * 10)
    server = RawServer()
    try:
        answer = server.initialize(workspace, url, model)
        assert "result" in answer, answer
        held = server.call("session/new", {"title": "shared"})["result"]["sessionId"]
        server.call("session/send", {"sessionId": held, "prompt": "hi"}, timeout=30)
        assert changes(server, held) == []  # its own turn is no news

        async def other_host() -> None:
            store = open_store(url)
            try:
                head = await store.head(held)
                await store.append(
                    held, [UserPrompt(text="from elsewhere"), AssistantMessage(text="x")], head
                )
                await store.append("not-held", [UserPrompt(text="nobody here has it")])
            finally:
                await store.close()

        asyncio.run(other_host())
        assert wait_for(lambda: changes(server, held)), server._state()
        (change,) = changes(server, held)

        async def head_now() -> int:
            store = open_store(url)
            try:
                return await store.head(held)
            finally:
                await store.close()

        assert change["head"] == asyncio.run(head_now())
        history = server.call("session/history", {"sessionId": held})["result"]["messages"]
        assert "from elsewhere" in str(history)  # the server reads the session anew
        assert not changes(server, "not-held")
        server.assert_protocol_only()
    finally:
        assert server.close() == 0
