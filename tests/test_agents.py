"""AgentHostSession against the SDK's own SQLiteSession: the same runs, the same items.

A scripted ``agents.models.interface.Model`` (no network) drives ``Runner.run``
through both sessions side by side; after every run the items each returns, and
the input each model call was given, must be equal as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, ModelSettings, Runner, SQLiteSession, function_tool  # noqa: E402
from agents.exceptions import ModelRefusalError  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary  # noqa: E402

from agent_host.agents import AgentHostSession  # noqa: E402

agents.set_tracing_disabled(True)
from agent_host.session.host import AgentHost  # noqa: E402


def message(text: str, number: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{number}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def call(name: str, arguments: str, number: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{number}",
        call_id=f"call_{number}",
        type="function_call",
        name=name,
        arguments=arguments,
        status="completed",
    )


def reasoning(text: str, number: int) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=f"rs_{number}", type="reasoning", summary=[Summary(type="summary_text", text=text)]
    )


def refusal(number: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_r{number}",
        type="message",
        role="assistant",
        status="completed",
        content=[
            ResponseOutputText(type="output_text", text="Here is a part:", annotations=[]),
            ResponseOutputRefusal(type="refusal", refusal="I can't help with the rest."),
        ],
    )


class ScriptedModel(Model):
    """Answers each call with the next scripted output; records what it was given."""

    def __init__(self, outputs: list[list]) -> None:
        self.outputs = list(outputs)
        self.inputs: list = []

    async def get_response(self, system_instructions, input, *args, **kwargs):  # noqa: A002
        self.inputs.append(json.loads(json.dumps(input, default=str)))
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):  # pragma: no cover - not used here
        raise NotImplementedError


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@function_tool
def population(city: str) -> str:
    """How many people live in a city."""
    return f"{len(city)} million in {city}"


def script() -> list[list]:
    """Three runs: a parallel pair of calls after reasoning, a refusal, a bad-JSON call."""
    return [
        [
            reasoning("two lookups", 1),
            call("weather", '{"city": "Paris"}', 1),
            call("population", '{"city": "Paris"}', 2),
        ],
        [reasoning("answer now", 2), message("Sunny, and 5 million people.", 1)],
        [refusal(2)],
        [call("weather", '{"city": "Rome"', 3)],  # not JSON: the SDK reports it to the model
        [message("Sorry, again: sunny in Rome.", 3)],
    ]


def prompts() -> list:
    return [
        "Weather and population of Paris?",
        [
            {"role": "user", "content": [{"type": "input_text", "text": "And this?"}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_image",
                        "image_url": "data:image/png;base64,AAAA",
                        "detail": "low",
                    }
                ],
            },
        ],
        "Weather in Rome?",
    ]


async def run_all(session, model: ScriptedModel) -> list[list]:
    agent = Agent(
        name="helper",
        instructions="Be brief.",
        model=model,
        tools=[weather, population],
        model_settings=ModelSettings(parallel_tool_calls=True),
    )
    snapshots = []
    for prompt in prompts():
        try:
            await Runner.run(agent, prompt, session=session)
        except ModelRefusalError:
            pass  # the SDK raises on a refusal; what it stored before must match too
        snapshots.append(as_json(await session.get_items()))
    return snapshots


def as_json(items) -> list:
    return json.loads(json.dumps(items))


@pytest.fixture
def pair(tmp_path):
    ours = AgentHostSession("sdk-1", store=f"sqlite:///{tmp_path}/ours.db", workdir=tmp_path)
    peer = SQLiteSession("sdk-1", str(tmp_path / "peer.db"))
    yield ours, peer
    peer.close()


async def test_runs_store_the_same_items_as_sqlite_session(pair):
    ours, peer = pair
    our_model, peer_model = ScriptedModel(script()), ScriptedModel(script())
    our_snapshots = await run_all(ours, our_model)
    peer_snapshots = await run_all(peer, peer_model)
    assert our_snapshots == peer_snapshots
    assert our_model.inputs == peer_model.inputs  # what the model saw, call for call
    kinds = [i.get("type", i.get("role")) for i in our_snapshots[-1]]
    assert kinds.count("reasoning") == 2 and kinds.count("function_call") == 3
    for limit in (None, 0, 1, 3, 5, 100, -1):
        assert as_json(await ours.get_items(limit)) == as_json(await peer.get_items(limit))
    await ours.close()


async def test_pop_and_clear_as_sqlite_session(pair):
    ours, peer = pair
    await run_all(ours, ScriptedModel(script()))
    await run_all(peer, ScriptedModel(script()))
    for _ in range(4):  # the last message, then a tool result, a call, a reasoning item
        assert as_json(await ours.pop_item()) == as_json(await peer.pop_item())
        assert as_json(await ours.get_items()) == as_json(await peer.get_items())
    await ours.clear_session()
    await peer.clear_session()
    assert await ours.get_items() == await peer.get_items() == []
    assert await ours.pop_item() is await peer.pop_item() is None
    await ours.add_items([{"role": "user", "content": "again"}])
    assert await ours.get_items() == [{"role": "user", "content": "again"}]
    await ours.close()


async def test_unknown_item_types_and_settings_limit(tmp_path):
    items = [
        {"role": "system", "content": "stay brief"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"q": "x"}},
        {"role": "developer", "content": "no tables"},
        {"type": "some_future_item", "payload": {"nested": [1, 2.5, None, True]}},
    ]
    ours = AgentHostSession(
        "odd", store=f"sqlite:///{tmp_path}/o.db", workdir=tmp_path, session_settings={"limit": 2}
    )
    await ours.add_items(items)
    assert await ours.get_items() == items[-2:]
    assert await ours.get_items(limit=10) == items
    await ours.close()


async def test_an_sdk_session_is_an_agent_host_session(tmp_path):
    store = f"sqlite:///{tmp_path}/s.db"
    ours = AgentHostSession("shared", store=store, workdir=tmp_path)
    await run_all(ours, ScriptedModel(script()))
    await ours.close()
    async with AgentHost(store=store, workdir=tmp_path) as host:
        [info] = await host.list_sessions()
        assert info.id == "shared" and info.workspace == str(tmp_path)
        checkpoints = await host.list_checkpoints("shared")
        # One checkpoint per user item: the second run's input held two.
        assert len(checkpoints) == 4
        history = await host.history("shared")
        assert history[0] == {"role": "user", "content": "Weather and population of Paris?"}
        parallel = history[1]
        assert [c["function"]["name"] for c in parallel["tool_calls"]] == ["weather", "population"]
        image = next(m for m in history if isinstance(m["content"], list))
        assert image["content"][0]["image_url"]["url"].startswith("data:image/png")
        bad = [
            c
            for m in history
            for c in m.get("tool_calls", [])
            if "Rome" in c["function"]["arguments"]
        ]
        assert bad[0]["function"]["arguments"] == '{"city": "Rome"'  # kept as the model wrote it


async def test_cli_continues_an_sdk_session_and_the_sdk_continues_it(tmp_path):
    store = f"sqlite:///{tmp_path}/s.db"
    ours = AgentHostSession("relay", store=store, workdir=tmp_path)
    await run_all(ours, ScriptedModel(script()))
    before = as_json(await ours.get_items())
    await ours.close()

    steps = tmp_path / "script.json"
    # A scripted model plays the step numbered by the assistant messages so far.
    steps.write_text(json.dumps({"steps": [{"text": "Continued by agent-host."}] * 10}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_HOST")}
    done = subprocess.run(
        [sys.executable, "-m", "agent_host", "run", "--store", store, "--session", "relay",
         "--model", f"scripted:{steps}", "--workspace", str(tmp_path), "What now?"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Continued by agent-host." in done.stdout

    again = AgentHostSession("relay", store=store, workdir=tmp_path)
    items = as_json(await again.get_items())
    assert items[: len(before)] == before
    assert items[len(before) :] == [
        {"role": "user", "content": "What now?"},
        {"role": "assistant", "content": "Continued by agent-host."},
    ]
    model = ScriptedModel([[message("Back in the SDK.", 9)]])
    await Runner.run(Agent(name="helper", model=model), "Still there?", session=again)
    assert model.inputs[0][-3:] == [
        {"role": "user", "content": "What now?"},
        {"role": "assistant", "content": "Continued by agent-host."},
        {"role": "user", "content": "Still there?"},
    ]
    await again.close()


async def test_a_shared_host_is_not_closed_by_the_session(tmp_path):
    async with AgentHost(store="memory:", workdir=tmp_path) as host:
        session = AgentHostSession("a", host=host)
        await session.add_items([{"role": "user", "content": "hi"}])
        await session.close()
        assert await host.get_items(session_id="a") == [{"role": "user", "content": "hi"}]
    with pytest.raises(ValueError, match="either host"):
        AgentHostSession("a", store="memory:", host=host)


async def test_the_sdk_docs_session_examples(tmp_path):
    """The Agents SDK's session docs, with our Session for theirs."""
    model = ScriptedModel(
        [
            [message("San Francisco", 1)],
            [message("California", 2)],
            [message("4", 3)],
            [message("5", 4)],
        ]
    )
    agent = Agent(name="Assistant", instructions="Reply very concisely.", model=model)
    session = AgentHostSession("conversation_123", f"sqlite:///{tmp_path}/conversations.db")

    result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
    assert result.final_output == "San Francisco"
    result = await Runner.run(agent, "What state is it in?", session=session)
    assert result.final_output == "California"
    assert [i.get("role") for i in model.inputs[1]] == ["user", "assistant", "user"]

    # Corrections: pop the answer and the question, ask again.
    result = await Runner.run(agent, "What's 2 + 2?", session=session)
    assistant_item = await session.pop_item()
    user_item = await session.pop_item()
    assert assistant_item["content"][0]["text"] == "4"
    assert user_item == {"role": "user", "content": "What's 2 + 2?"}
    result = await Runner.run(agent, "What's 2 + 3?", session=session)
    assert result.final_output == "5"
    assert "What's 2 + 2?" not in json.dumps(model.inputs[-1])

    # Memory operations.
    items = await session.get_items()
    assert len(items) == 6
    await session.add_items(
        [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
    )
    assert (await session.pop_item()) == {"role": "assistant", "content": "Hi there!"}
    await session.clear_session()
    assert await session.get_items() == []
    await session.close()
