"""initializationOptions.shellEnvironment reaches a turn's run_command in a real
``agent-host serve``, and a bad one is refused by initialize, naming the field."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features

from ..server.conftest import (
    SERVER_COMMAND,
    plain_converter,
    request,
    start_agent,
    stop_agent,
    write_script,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ENV_TURN = [
    {"tool_calls": [{"name": "run_command", "arguments": {"command": "env"}}]},
    {"text": "done"},
]


async def test_a_turns_command_runs_under_the_servers_policy(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-commands")
    monkeypatch.setenv("MY_TOKEN", "tok")
    root = tmp_path / "ws"
    root.mkdir()
    client = await start_agent(
        root=root,
        store=tmp_path / "store",
        model=write_script(tmp_path / "s.json", ENV_TURN),
        options={"shellEnvironment": {"include": ["MY_TOKEN"], "set": {"FROM_WIRE": "yes"}}},
    )
    try:
        sent = await request(client, "session/send", {"prompt": "env"})
        assert sent["stopReason"] == "end_turn"
        history = await request(client, "session/history", {"sessionId": sent["sessionId"]})
    finally:
        await stop_agent(client)
    [tool] = [m for m in history["messages"] if m["role"] == "tool"]
    lines = tool["content"].splitlines()
    assert "FROM_WIRE=yes" in lines and "MY_TOKEN=tok" in lines
    assert not any(line.startswith("OPENAI_API_KEY=") for line in lines)


async def test_a_bad_policy_is_refused_naming_the_field(tmp_path):
    client = LanguageClient(converter_factory=plain_converter)
    register_lsp_features(client)
    await client.start_io(*SERVER_COMMAND)
    try:
        with pytest.raises(JsonRpcException) as bad:
            await client.initialize_session(
                lsp.InitializeParams(
                    capabilities=lsp.ClientCapabilities(),
                    root_uri=tmp_path.as_uri(),
                    initialization_options={
                        "store": "memory:",
                        "shellEnvironment": {"set": {"X": 1}},
                    },
                )
            )
    finally:
        await stop_agent(client)
    assert bad.value.code == -32602
    assert "shellEnvironment.set.X must be a string" in bad.value.message
