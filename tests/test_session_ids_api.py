"""An email (or any other non-empty string up to 512 characters) is a session id
for every Python API: AgentHostSession through the Agents SDK's Runner.run,
AgentHost (list, history, fork, delete) and the harness facades reach one session
by it, on the file store and on SQLite (session/store/ids.py)."""

from __future__ import annotations

import json

import pytest

from agent_host.harness import aagent_session
from agent_host.session import InvalidSessionId
from agent_host.session.host import AgentHost

agents = pytest.importorskip("agents")

from agents import Agent, Runner  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import ResponseOutputMessage, ResponseOutputText  # noqa: E402

from agent_host.agents import AgentHostSession  # noqa: E402

agents.set_tracing_disabled(True)
EMAIL = "user:123@example.com"


class Replies(Model):
    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.inputs: list = []

    async def get_response(self, system_instructions, input, *args, **kwargs):  # noqa: A002
        self.inputs.append(json.loads(json.dumps(input, default=str)))
        n = len(self.inputs)
        text = ResponseOutputText(type="output_text", text=self.texts.pop(0), annotations=[])
        reply = ResponseOutputMessage(
            id=f"msg_{n}", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[reply], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):  # pragma: no cover - not used here
        raise NotImplementedError


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_an_email_is_a_session_id_for_the_sdk_and_every_api(tmp_path, kind):
    store = (tmp_path / "store").as_uri() if kind == "file" else f"sqlite:///{tmp_path}/s.db"
    model = Replies("Hi.", "Still here.")
    agent = Agent(name="helper", model=model)
    session = AgentHostSession(EMAIL, store=store, workdir=tmp_path)
    await Runner.run(agent, "Hello?", session=session)
    await session.close()
    again = AgentHostSession(EMAIL, store=store, workdir=tmp_path)
    await Runner.run(agent, "Are you there?", session=again)
    # The second run's model call saw the first run: the session was found again.
    first, *middle, last = model.inputs[1]
    assert first == {"role": "user", "content": "Hello?"}
    assert last == {"role": "user", "content": "Are you there?"} and len(middle) == 1
    assert len(await again.get_items()) == 4
    await again.close()

    async with AgentHost(store=store, workdir=tmp_path) as host:
        assert [i.id for i in await host.list_sessions()] == [EMAIL]
        history = await host.history(EMAIL)
        assert [m["content"] for m in history] == ["Hello?", "Hi.", "Are you there?", "Still here."]
        fork = await host.fork(EMAIL)
        assert sorted(i.id for i in await host.list_sessions()) == sorted([EMAIL, fork])
        await host.delete_session(EMAIL)
        assert [i.id for i in await host.list_sessions()] == [fork]
        assert await host.history(fork) == history
        for bad in ("", "x" * 513, "a\x00b", "\ud800"):
            with pytest.raises(InvalidSessionId, match="a session id is 1-512 characters"):
                await host.history(bad)
            with pytest.raises(InvalidSessionId):
                AgentHostSession(bad, host=host)


async def test_the_harness_facade_continues_a_session_by_a_unicode_id(tmp_path):
    store = (tmp_path / "store").as_uri()
    sid = "проект/чат.1"
    steps = tmp_path / "script.json"
    steps.write_text(json.dumps({"steps": [{"text": "one"}, {"text": "two"}]}))
    opts = {"model": f"scripted:{steps}", "store": store, "workdir": str(tmp_path)}
    async with aagent_session(**opts, session_id=sid) as s:
        assert s.session_id == sid
        await s.arun("first")
    async with aagent_session(**opts, session_id=sid) as s:
        await s.arun("second")
        assert [m["content"] for m in await s.ahistory() if m["role"] == "user"] == [
            "first",
            "second",
        ]
    async with AgentHost(store=store, workdir=tmp_path) as host:
        assert [i.id for i in await host.list_sessions()] == [sid]
