"""A stalled model endpoint through a real `agent-host acp` and the official SDK's
client, as an editor starts it: the limits come from the environment (as an editor's
agent configuration sets them) or from initialize's ``_meta``; the client hears of
the wait as ``agent_thought_chunk`` updates, the prompt ends within the limit with
an error naming the setting, and a cancel while it waits ends the turn at once.
The endpoint is a loopback HTTP server that accepts and never answers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import acp
import pytest

from agent_host.session.providers import limits as L

from ..session.providers.fakes import FakeServer, hang
from .conftest import RecordingClient, new_session, say

pytestmark = [pytest.mark.exclusive, pytest.mark.slow, pytest.mark.timeout(90)]

START_SLACK = 10.0
"""Seconds on top of the computed bound: the agent's start and the turn's set-up."""


class ThoughtClient(RecordingClient):
    def __init__(self) -> None:
        super().__init__()
        self.thought = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await super().session_update(session_id, update, **kwargs)
        if update.session_update == "agent_thought_chunk":
            self.thought.set()

    def thoughts(self) -> list[str]:
        return [u.content.text for u in self.of("agent_thought_chunk")]


@pytest.fixture
def stalled():
    server = FakeServer([hang]).start()
    yield server
    server.stop()


def model_env(server: FakeServer, **more: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test-x", "OPENAI_BASE_URL": server.url + "/v1", **more}


async def test_the_environment_limits_a_stalled_endpoint_and_the_client_hears(
    spawn, workspace, stalled
):
    env = model_env(stalled, AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT="1", AGENT_HOST_MODEL_RETRIES="1")
    client = ThoughtClient()
    bound = L.Limits(first_byte_timeout=1, retries=1).stall_bound()
    async with spawn(None, "--model", "openai/gpt-4.1-mini", client=client, env=env) as (
        conn,
        _,
    ):
        sid = await new_session(conn, workspace)
        started = time.monotonic()
        with pytest.raises(acp.RequestError) as failed:
            await say(conn, sid, "hi")
        took = time.monotonic() - started
    assert took < bound + START_SLACK, took
    message = str(failed.value)
    assert f"no answer from {stalled.url}/v1 within 1 s, 2 times" in message
    assert "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT" in message
    assert "--model-first-byte-timeout" in message
    [retry] = client.thoughts()
    assert retry.startswith("no answer from openai/gpt-4.1-mini in 1 s; retry 1 of 1 in ")
    assert len(stalled.received) == 2


async def test_initialize_meta_sets_the_limits_over_the_flags(spawn, workspace, stalled):
    meta = {"agent-host": {"modelFirstByteTimeout": {"openai": 1}, "modelRetries": 0}}
    client = ThoughtClient()
    async with spawn(
        None,
        "--model",
        "openai/gpt-4.1-mini",
        "--model-first-byte-timeout",
        "40",
        "--model-retries",
        "3",
        client=client,
        env=model_env(stalled),
        meta=meta,
    ) as (conn, _):
        sid = await new_session(conn, workspace)
        started = time.monotonic()
        with pytest.raises(acp.RequestError) as failed:
            await say(conn, sid, "hi")
        took = time.monotonic() - started
    assert took < 1 + START_SLACK, took
    assert f"no answer from {stalled.url}/v1 within 1 s (model first-byte" in str(failed.value)
    assert len(stalled.received) == 1


async def test_a_bad_limit_in_initialize_meta_is_invalid_params_naming_it(spawn):
    bad = {"agent-host": {"modelRetries": "often"}}
    with pytest.raises(acp.RequestError) as failed:
        async with spawn([], meta=bad):
            pass
    assert failed.value.code == -32602
    assert str(failed.value).startswith('_meta["agent-host"].modelRetries: must be a whole number')


async def test_cancel_while_the_model_does_not_answer_ends_the_turn(spawn, workspace, stalled):
    env = model_env(stalled, AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT="1", AGENT_HOST_MODEL_RETRIES="5")
    client = ThoughtClient()
    async with spawn(None, "--model", "openai/gpt-4.1-mini", client=client, env=env) as (
        conn,
        _,
    ):
        sid = await new_session(conn, workspace)
        turn = asyncio.create_task(say(conn, sid, "hi"))
        await asyncio.wait_for(client.thought.wait(), 30)  # the first retry is announced
        started = time.monotonic()
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(turn, 10)
    assert answer.stop_reason == "cancelled" and time.monotonic() - started < 3
