"""Sessions over ACP: load after a restart, list, resume, fork, close; bad input."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import acp
import pytest

from .conftest import RecordingClient, new_session, say

TWO_TURNS = [
    {
        "text": "Writing b.py.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "b.py", "content": "b\n"}}],
    },
    {"text": "Wrote it."},
    {"text": "Second answer."},
]


@pytest.mark.slow
async def test_load_after_a_restart_replays_the_conversation(spawn, workspace):
    async with spawn(TWO_TURNS, "--approval", "auto") as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "add b.py")
        await say(conn, sid, "and then?")

    async with spawn() as (conn, client):  # a new process over the same store
        loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        replayed = [u for s, u in client.updates if s == sid]

    kinds = [u.session_update for u in replayed]
    assert kinds == [
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "user_message_chunk",
        "agent_message_chunk",
        "available_commands_update",
    ]
    assert [u.content.text for u in client.of("user_message_chunk")] == ["add b.py", "and then?"]
    assert client.text(sid) == "Writing b.py.Wrote it.Second answer."
    assert replayed[2].title == "Write b.py" and replayed[3].status == "completed"
    assert loaded.modes.current_mode_id == "ask"


async def test_list_filters_by_folder_and_fork_copies_the_session(spawn, workspace, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    async with spawn(TWO_TURNS, "--approval", "auto") as (conn, client):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "add b.py")
        elsewhere = await new_session(conn, other)
        await say(conn, elsewhere, "hello")  # (a session is listed from its first prompt)

        here = await conn.list_sessions(cwd=str(workspace))
        everywhere = await conn.list_sessions()
        forked = await conn.fork_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        after_fork = await conn.list_sessions(cwd=str(workspace))
        client.updates.clear()
        await conn.load_session(cwd=str(workspace), session_id=forked.session_id, mcp_servers=[])

    assert [s.session_id for s in here.sessions] == [sid]
    assert here.sessions[0].cwd == str(workspace.resolve())
    assert here.sessions[0].title == "add b.py"
    assert {s.session_id for s in everywhere.sessions} == {sid, elsewhere}
    assert forked.session_id not in (sid, elsewhere)
    assert {s.session_id for s in after_fork.sessions} == {sid, forked.session_id}
    assert client.text(forked.session_id) == "Writing b.py.Wrote it."


async def test_resume_and_close(spawn, workspace):
    async with spawn(TWO_TURNS, "--approval", "auto") as (conn, client):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "add b.py")
        await conn.close_session(session_id=sid)
        resumed = await conn.resume_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        answer = await say(conn, sid, "and then?")  # a closed session is still stored

    assert resumed.modes.current_mode_id == "auto"
    assert answer.stop_reason == "end_turn"
    assert client.text(sid).endswith("Second answer.")


async def test_slash_commands_are_advertised(spawn, workspace):
    async with spawn([]) as (conn, client):
        await new_session(conn, workspace)
        for _ in range(50):  # sent just after the answer
            if client.of("available_commands_update"):
                break
            await asyncio.sleep(0.02)
    [update] = client.of("available_commands_update")
    names = [c.name for c in update.available_commands]
    assert names == ["checkpoints", "rewind", "undo-rewind", "compact", "fork"]


@pytest.mark.exclusive  # 10 s for the first answer, the agent's start included
async def test_bad_params_are_answered_with_the_field_named(tmp_path, workspace):
    """Raw lines, so that what the SDK's client would refuse to send gets sent; and
    every line the agent writes must be JSON-RPC (nothing else on stdout)."""
    script = tmp_path / "script.json"
    script.write_text('{"steps": []}')
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "agent_host", "acp", "--model", f"scripted:{script}"],
        *["--store", str(tmp_path / "store")],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=workspace,
    )
    requests = [
        ("initialize", {"protocolVersion": 1}),
        ("session/new", {"mcpServers": []}),
        ("session/new", {"cwd": "relative/dir", "mcpServers": []}),
        ("session/prompt", {"sessionId": "x", "prompt": [{"type": "nonsense"}]}),
        ("session/set_mode", {"sessionId": 7, "modeId": "auto"}),
        ("_agent-host/restore", {"sessionId": "x", "seq": "three"}),
        ("session/no_such_method", {}),
    ]
    assert process.stdin is not None and process.stdout is not None
    for i, (method, params) in enumerate(requests):
        line = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        process.stdin.write(json.dumps(line).encode() + b"\n")
    await process.stdin.drain()
    answers = {}
    while len(answers) < len(requests):
        line = await asyncio.wait_for(process.stdout.readline(), 10)
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0"
        if "id" in message:
            answers[message["id"]] = message
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 10)

    assert answers[0]["result"]["protocolVersion"] == 1
    codes = [answers[i].get("error", {}).get("code") for i in range(1, len(requests))]
    assert codes == [-32602, -32602, -32602, -32602, -32602, -32601]
    assert answers[1]["error"]["data"]["errors"][0]["loc"] == ["cwd"]
    assert "cwd" in answers[2]["error"]["message"]
    assert "seq" in answers[5]["error"]["message"]


async def test_the_model_is_a_session_config_option(spawn, workspace, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"steps": [{"text": "from the other model"}] * 4}))
    chosen = f"scripted:{other}"
    async with spawn([{"text": "from the first model"}] * 4) as (conn, client):
        new = await conn.new_session(cwd=str(workspace))
        # The model, and beside it the sandbox (tests/acp/test_sandbox_exit.py).
        [option, _] = new.config_options
        first = option.current_value
        assert first.startswith("scripted:") and first != chosen
        sid = new.session_id
        await conn.prompt(session_id=sid, prompt=[acp.text_block("hi")])
        assert client.text(sid) == "from the first model"
        answer = await conn.set_config_option(config_id="model", session_id=sid, value=chosen)
        [option, sandbox] = answer.config_options
        assert option.id == "model" and option.current_value == chosen
        assert sandbox.id == "sandbox"
        await conn.prompt(session_id=sid, prompt=[acp.text_block("switch")])
        await conn.prompt(session_id=sid, prompt=[acp.text_block("and again")])
        assert client.text(sid).endswith("from the other modelfrom the other model")
        with pytest.raises(acp.RequestError) as bad:
            await conn.set_config_option(config_id="temperature", session_id=sid, value="hot")
        assert bad.value.code == -32602


async def test_a_model_without_its_key_asks_for_authentication(tmp_path, workspace):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    client = RecordingClient()
    command = ["-m", "agent_host", "acp", "--model", "openai/gpt-4.1-mini",
               "--store", str(tmp_path / "store")]  # fmt: skip
    async with acp.spawn_agent_process(
        client, sys.executable, *command, cwd=workspace, env=env, use_unstable_protocol=True
    ) as (conn, _process):
        hello = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        [method] = hello.auth_methods
        assert method.id == "env:OPENAI_API_KEY" and "OPENAI_API_KEY" in method.description
        with pytest.raises(acp.RequestError) as refused:
            await conn.new_session(cwd=str(workspace))
        assert refused.value.code == -32000
        with pytest.raises(acp.RequestError, match="OPENAI_API_KEY is not set"):
            await conn.authenticate(method_id=method.id)


async def test_a_missing_key_s_error_message_names_the_variable(tmp_path, workspace):
    # Editors show the error's message, not its data (agent-shell: "Error (-32000)
    # <message> [Details]"): the message itself says what to set and where.
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    command = ["-m", "agent_host", "acp", "--model", "openai/gpt-4.1-mini",
               "--store", str(tmp_path / "store")]  # fmt: skip
    async with acp.spawn_agent_process(
        RecordingClient(), sys.executable, *command, cwd=workspace, env=env
    ) as (conn, _process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        with pytest.raises(acp.RequestError) as refused:
            await conn.new_session(cwd=str(workspace))
    error = refused.value
    assert error.code == -32000
    assert str(error).startswith(
        "No API key for openai/gpt-4.1-mini: set OPENAI_API_KEY in the environment "
        "agent-host starts in"
    ), str(error)
    assert "`agent-host acp`" in str(error)
    assert error.data == {"missing": "OPENAI_API_KEY", "model": "openai/gpt-4.1-mini"}
