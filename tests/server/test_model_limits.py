"""A stalled model endpoint through a real `agent-host serve`, driven by the LSP
client the CLI uses (``agent_host.client``): the limits come from
``initializationOptions`` (per provider), the client hears of each retry as a
``session/event`` of kind ``model_wait`` that the protocol's schema describes, and
``session/send`` ends within the limit with an error naming the setting. The
endpoint is a loopback HTTP server that accepts and never answers."""

from __future__ import annotations

import time
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agent_host.client import AgentClient, ServerError
from agent_host.rpc import methods
from agent_host.rpc.schema import protocol_schema
from agent_host.session.providers import limits as L

from ..session.providers.fakes import FakeServer, hang

pytestmark = [pytest.mark.exclusive, pytest.mark.slow, pytest.mark.timeout(90)]


async def test_initialization_options_limit_a_stalled_endpoint_and_events_tell(
    tmp_path, monkeypatch
):
    server = FakeServer([hang]).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    # the environment's for all is beaten by initializationOptions' for openai
    monkeypatch.setenv("AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT", "40")
    events: list[dict[str, Any]] = []
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = AgentClient(
        store=str(tmp_path / "store"),
        model="openai/gpt-4.1-mini",
        workspace=workspace,
        on_event=events.append,
        model_limits={
            "model_first_byte_timeout": {"openai": 1, "ollama": 60},
            "model_retries": 1,
        },
    )
    try:
        async with client:
            started = time.monotonic()
            with pytest.raises(ServerError) as failed:
                await client.request(methods.SEND, {"prompt": "hi"})
            took = time.monotonic() - started
    finally:
        server.stop()
    assert took < L.Limits(first_byte_timeout=1, retries=1).stall_bound() + 5, took
    message = failed.value.message
    assert f"no answer from {server.url}/v1 within 1 s, 2 times" in message
    assert "modelFirstByteTimeout" in message and "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT" in message
    [wait] = [e for e in events if e["kind"] == "model_wait"]
    data = wait["data"]
    assert data["message"].startswith("no answer from openai/gpt-4.1-mini in 1 s; retry 1 of 1")
    assert (data["attempt"], data["attempts"], data["waited"]) == (1, 2, 1)
    schema = protocol_schema()
    validator = Draft202012Validator(
        {**schema["eventData"]["model_wait"], "$defs": schema["$defs"]}
    )
    assert list(validator.iter_errors(data)) == []
    assert len(server.received) == 2


async def test_a_bad_limit_in_initialization_options_fails_initialize(tmp_path):
    client = AgentClient(
        store=str(tmp_path / "store"), workspace=tmp_path, model_limits={"model_retries": 99}
    )
    with pytest.raises(ServerError, match="model_retries must be a whole number from 0 to 20"):
        await client.start()
    await client.close()
