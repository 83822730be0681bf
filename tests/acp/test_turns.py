"""Turns over ACP: streaming, tool calls, permission asks, modes, cancel, errors."""

from __future__ import annotations

import asyncio
import random

import acp
import pytest

from .conftest import new_session, say

WRITE_B = {"name": "write_file", "arguments": {"path": "b.py", "content": "b = 2\n"}}
EDIT_A = {
    "name": "edit_file",
    "arguments": {"path": "a.py", "old_string": "'a'", "new_string": "'A'"},
}


async def test_initialize_advertises_what_the_agent_does(spawn):
    async with spawn([]) as (conn, _):
        answer = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    assert answer.protocol_version == 1
    caps = answer.agent_capabilities
    assert caps.load_session is True
    assert caps.prompt_capabilities.embedded_context is True
    assert caps.prompt_capabilities.image is False
    assert caps.mcp_capabilities.http is True
    session = caps.session_capabilities
    assert session.list is not None and session.fork is not None
    assert session.resume is not None and session.close is not None
    assert session.delete is not None  # ACP v1's session/delete
    assert caps.field_meta["agent-host"]["methods"] == [
        "_agent-host/checkpoints",
        "_agent-host/restore",
        "_agent-host/restorePreview",
        "_agent-host/changes",
        "_agent-host/revertFiles",
        "_agent-host/undoRestore",
        "_agent-host/compact",
        "_agent-host/fork",
        "_agent-host/delete",
    ]
    assert answer.auth_methods == []
    assert answer.agent_info.name == "agent-host"


async def test_a_turn_streams_text_and_tool_calls_and_writes_the_file(spawn, workspace):
    calls = [
        {"name": "read_file", "arguments": {"path": "a.py"}},
        {"name": "grep", "arguments": {"pattern": "print"}},
        {"name": "run_command", "arguments": {"command": "echo hi"}},
        WRITE_B,
    ]
    steps = [{"text": "Let me look around first.", "tool_calls": calls}, {"text": "All done."}]
    async with spawn(steps, "--approval", "auto") as (conn, client):
        sid = await new_session(conn, workspace)
        answer = await say(conn, sid, "add b.py")

    assert answer.stop_reason == "end_turn"
    assert answer.usage.total_tokens > 0
    assert client.text(sid) == "Let me look around first.All done."
    assert (workspace / "b.py").read_text() == "b = 2\n"
    started = client.of("tool_call", sid)
    assert [(c.kind, c.title, c.status) for c in started] == [
        ("read", "Read a.py", "pending"),
        ("search", "Search for 'print'", "pending"),
        ("execute", "Run echo hi", "pending"),
        ("edit", "Write b.py", "pending"),
    ]
    assert started[3].locations[0].path == str(workspace.resolve() / "b.py")
    done = [u for u in client.of("tool_call_update", sid) if u.status in ("completed", "failed")]
    assert [u.tool_call_id for u in done] == [c.tool_call_id for c in started]
    assert all(u.status == "completed" for u in done)
    assert "hi" in done[2].content[-1].content.text
    write = done[3].content
    assert write[0].type == "diff" and write[0].new_text == "b = 2\n" and write[0].old_text is None
    assert client.of("available_commands_update", sid)
    assert client.of("usage_update", sid)[-1].size > 0


async def test_ask_mode_asks_and_allow_once_runs_the_edit(spawn, workspace):
    steps = [{"tool_calls": [EDIT_A]}, {"text": "Edited."}]
    async with spawn(steps) as (conn, client):
        sid = await new_session(conn, workspace)
        answer = await say(conn, sid, "capitalise")

    assert answer.stop_reason == "end_turn"
    assert (workspace / "a.py").read_text() == "print('A')\n"
    [asked] = client.permissions
    assert asked.tool_call_id == client.of("tool_call", sid)[0].tool_call_id
    assert asked.kind == "edit" and asked.title == "Edit a.py"
    [diff] = asked.content
    assert (diff.old_text, diff.new_text) == ("print('a')\n", "print('A')\n")


@pytest.mark.parametrize("answer", ["reject_once", None])
async def test_a_rejection_or_a_client_error_leaves_the_file(spawn, workspace, answer):
    steps = [{"tool_calls": [WRITE_B]}, {"text": "Not allowed, then."}]
    async with spawn(steps) as (conn, client):
        client.answer = answer
        sid = await new_session(conn, workspace)
        result = await say(conn, sid, "add b.py")

    assert result.stop_reason == "end_turn"
    assert len(client.permissions) == 1
    assert not (workspace / "b.py").exists()
    [done] = [u for u in client.of("tool_call_update", sid) if u.status]
    assert done.status == "failed"
    assert "Permission denied" in done.content[-1].content.text


async def test_set_mode_changes_what_is_asked(spawn, workspace):
    steps = [{"tool_calls": [WRITE_B]}, {"text": "Written."}]
    async with spawn(steps) as (conn, client):
        created = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = created.session_id
        assert created.modes.current_mode_id == "ask"
        assert [m.id for m in created.modes.available_modes] == [
            "ask",
            "auto-edit",
            "auto",
            "read-only",
        ]
        await conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        await say(conn, sid, "add b.py")
        with pytest.raises(acp.RequestError) as bad:
            await conn.set_session_mode(session_id=sid, mode_id="yolo")

    assert client.permissions == []
    assert (workspace / "b.py").exists()
    assert [u.current_mode_id for u in client.of("current_mode_update", sid)] == ["auto-edit"]
    assert bad.value.code == -32602 and "modeId" in str(bad.value)


async def test_cancel_ends_the_turn_and_leaves_the_session_whole(spawn, workspace):
    steps = [{"text": "A slow answer that will never finish", "delay_ms": 5000}]
    async with spawn(steps) as (conn, client):
        sid = await new_session(conn, workspace)
        turn = asyncio.create_task(say(conn, sid, "take your time"))
        await asyncio.sleep(0.5)
        await conn.cancel(session_id=sid)
        answer = await asyncio.wait_for(turn, 10)
        client.updates.clear()
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])

    assert answer.stop_reason == "cancelled"
    assert [u.content.text for u in client.of("user_message_chunk")] == ["take your time"]


async def test_a_model_error_is_a_jsonrpc_error_with_our_code(spawn, workspace):
    async with spawn([]) as (conn, _):  # no steps: the script is exhausted at once
        sid = await new_session(conn, workspace)
        with pytest.raises(acp.RequestError) as failed:
            await say(conn, sid, "hello")
    assert failed.value.code == -31007
    assert "exhausted" in str(failed.value)


async def test_an_unknown_session_is_acps_resource_not_found(spawn, workspace):
    bad = "no-such-session"
    async with spawn([]) as (conn, _):
        attempts = {
            "prompt": say(conn, bad, "hello"),
            "load": conn.load_session(cwd=str(workspace), session_id=bad, mcp_servers=[]),
            "resume": conn.resume_session(cwd=str(workspace), session_id=bad, mcp_servers=[]),
            "set_mode": conn.set_session_mode(session_id=bad, mode_id="auto"),
            "close": conn.close_session(session_id=bad),
            "fork": conn.fork_session(cwd=str(workspace), session_id=bad, mcp_servers=[]),
            **{
                f"_agent-host/{method}": conn.ext_method(
                    f"agent-host/{method}", {"sessionId": bad, **extra}
                )
                for method, extra in (
                    ("checkpoints", {}),
                    ("restore", {"seq": 1}),
                    ("undoRestore", {}),
                    ("compact", {}),
                    ("fork", {}),
                    ("delete", {}),
                )
            },
        }
        for name, attempt in attempts.items():
            with pytest.raises(acp.RequestError) as missing:
                await attempt
            # ACP's -32002 "Resource not found"; data names our kind.
            assert missing.value.code == -32002, (name, missing.value)
            assert missing.value.data["kind"] == "SessionNotFound", (name, missing.value.data)
            assert missing.value.data["error"] == str(missing.value), (name, missing.value.data)


async def test_embedded_resources_and_links_reach_the_prompt(spawn, workspace):
    uri = (workspace / "notes.md").as_uri()
    blocks = [
        acp.text_block("summarise"),
        acp.resource_link_block("a.py", (workspace / "a.py").as_uri()),
        acp.resource_block(acp.embedded_text_resource(uri, "the notes")),
    ]
    async with spawn([{"text": "Summary."}]) as (conn, client):
        sid = await new_session(conn, workspace)
        await conn.prompt(session_id=sid, prompt=blocks)
        client.updates.clear()
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])

    [prompt] = [u.content.text for u in client.of("user_message_chunk")]
    assert prompt.startswith("summarise\n[@a.py](file://")
    assert f"<context uri={uri!r}>\nthe notes\n</context>" in prompt


@pytest.mark.slow
async def test_cancels_at_random_moments_leave_every_turn_closed(spawn, workspace):
    """A turn of writes, a command and slow text, cancelled at a random moment, eight
    times over one session: each prompt answers, the log stays whole (every tool call
    answered, files and checkpoints consistent), and the session goes on."""
    rng = random.Random(12)
    turn = [
        {"text": "one", "delay_ms": 40,
         "tool_calls": [{"name": "write_file", "arguments": {"path": "w.txt", "content": "1\n"}}]},
        {"text": "two", "delay_ms": 40,
         "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 0.2; echo hi"}}]},
        {"text": "three, slowly", "delay_ms": 300},
    ]  # fmt: skip
    async with spawn(turn * 40, "--approval", "auto") as (conn, client):
        sid = await new_session(conn, workspace)
        stops = []
        for attempt in range(8):
            prompt = asyncio.create_task(say(conn, sid, f"attempt {attempt}"))
            await asyncio.sleep(rng.uniform(0, 0.7))
            await conn.cancel(session_id=sid)
            stops.append((await asyncio.wait_for(prompt, 20)).stop_reason)
        assert set(stops) <= {"cancelled", "end_turn"} and "cancelled" in stops
        client.updates.clear()
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        calls = {u.tool_call_id for u in client.of("tool_call", sid)}
        finished = {
            u.tool_call_id
            for u in client.of("tool_call_update", sid)
            if u.status in ("completed", "failed")
        }
        assert calls == finished  # every call the log holds has its result
        prompts = [u.content.text for u in client.of("user_message_chunk", sid)]
        # In order; a prompt cancelled before it reached the log (a loaded machine
        # can take longer than the random wait to get there) is not in it, and every
        # prompt that ran to its end is.
        sent = [f"attempt {i}" for i in range(8)]
        assert prompts == [p for p in sent if p in prompts], prompts
        ended = {sent[i] for i, stop in enumerate(stops) if stop == "end_turn"}
        assert ended <= set(prompts), (stops, prompts)
        answer = await say(conn, sid, "still there?")
        assert answer.stop_reason in ("end_turn", "cancelled")
