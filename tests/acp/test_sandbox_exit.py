"""ACP's way out of the sandbox: a command the sandbox stopped is asked about again
with ``session/request_permission`` ("Run without the sandbox: ..."), allowing runs
it unconfined; the sandbox is a session config option beside the approval modes,
and ``_meta`` sets the policy."""

from __future__ import annotations

import acp
import pytest

from agent_host.service.text import shorten
from agent_host.session.sandbox import mechanism

from .conftest import new_session, results, say

pytestmark = pytest.mark.skipif(
    not mechanism().available, reason=f"no sandbox: {mechanism().reason}"
)


def run(text: str) -> dict:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": text}}]}


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_a_stopped_command_is_asked_about_and_runs_unconfined_if_allowed(
    spawn, workspace, outside, answer
):
    target = outside / "escaped.txt"
    steps = [run(f"echo out > {target}"), {"text": "done"}]
    async with spawn(steps, "--approval", "auto") as (conn, client):
        client.answer = answer
        sid = await new_session(conn, workspace)
        assert (await say(conn, sid, "write outside")).stop_reason == "end_turn"

    (asked,) = client.permissions
    assert asked.title.startswith("Run without the sandbox:")
    assert asked.tool_call_id == client.of("tool_call", sid)[0].tool_call_id
    said = asked.content[0].content.text
    assert "The sandbox stopped this command" in said and "wrote where" in said
    (output,) = results(client, sid)
    assert "[the sandbox stopped this command:" in output
    if answer == "allow_once":
        assert target.read_text() == "out\n"
        assert "the user approved running it without the sandbox" in output
    else:
        assert not target.exists()
        assert "did not approve" in output


async def test_the_sandbox_is_a_session_config_option(spawn, workspace, outside):
    target = outside / "free.txt"
    steps = [run(f"echo out > {target}"), {"text": "done"}]
    async with spawn(steps, "--approval", "auto") as (conn, client):
        created = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = created.session_id
        (option,) = [o for o in created.config_options if o.id == "sandbox"]
        assert option.current_value == "workspace-write"
        assert {o.value for o in option.options} == {"workspace-write", "read-only", "full"}
        changed = await conn.set_config_option(config_id="sandbox", session_id=sid, value="full")
        (now,) = [o for o in changed.config_options if o.id == "sandbox"]
        assert now.current_value == "full"
        await say(conn, sid, "write outside")
        with pytest.raises(acp.RequestError) as bad:
            await conn.set_config_option(config_id="sandbox", session_id=sid, value="docker")

    assert target.read_text() == "out\n" and client.permissions == []
    assert bad.value.code == -32602 and "value" in str(bad.value)


async def test_meta_and_the_flag_set_the_policy(spawn, workspace, outside):
    target = outside / "free.txt"
    steps = [run(f"echo out > {target}"), {"text": "done"}]
    meta = {"agent-host": {"sandbox": {"mode": "full"}}}
    async with spawn(steps, "--approval", "auto", "--sandbox", "read-only", meta=meta) as (
        conn,
        client,
    ):
        created = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        (option,) = [o for o in created.config_options if o.id == "sandbox"]
        assert option.current_value == "full"  # _meta over the flag
        await say(conn, created.session_id, "write outside")
    assert target.read_text() == "out\n"


async def test_a_bad_sandbox_in_meta_is_invalid_params_naming_the_field(spawn, workspace):
    meta = {"agent-host": {"sandbox": {"limits": {"processes": -1}}}}
    with pytest.raises(acp.RequestError) as bad:
        async with spawn([{"text": "x"}], meta=meta):
            pass
    assert bad.value.code == -32602
    assert str(bad.value) == (
        '_meta["agent-host"].sandbox.limits.processes: must be a positive integer or null'
    )


async def test_rewind_warns_of_outside_changes_only_past_an_unconfined_run(
    spawn, workspace, outside
):
    target = outside / "escaped.txt"
    escape = f"echo out > {target}"
    steps = [run("echo b > b.txt"), {"text": "made b"}, run(escape), {"text": "wrote"}]
    steps += [run("echo c > c.txt"), {"text": "made c"}]
    async with spawn(steps, "--approval", "auto") as (conn, client):
        client.answer = "allow_once"
        sid = await new_session(conn, workspace)
        await say(conn, sid, "make b")
        await say(conn, sid, "write outside")
        client.updates.clear()
        await say(conn, sid, "/checkpoints")
        listing = client.text(sid)
        client.updates.clear()
        await say(conn, sid, "/rewind -1 --preview")
        previewed = client.text(sid)
        client.updates.clear()
        await say(conn, sid, "/rewind -1")
        rewound = client.text(sid)

        confined = await new_session(conn, workspace)
        await say(conn, confined, "make c")
        client.updates.clear()
        await say(conn, confined, "/rewind -1")
        rewound_confined = client.text(confined)

    assert target.read_text() == "out\n"  # what the way out did outside stays
    made_b, wrote = [line for line in listing.splitlines() if line.startswith("- ")]
    assert "without the sandbox" not in made_b
    named = shorten(escape, 60)  # a command is named on one short line
    assert wrote.endswith(f"ran without the sandbox: `{named}`")
    warning = f"Ran without the sandbox: `{named}`; what they changed outside the workspace"
    assert f"{warning} would not be undone." in previewed
    assert f"{warning} were not undone." in rewound
    assert "Rewound to just before 'make c'" in rewound_confined
    assert not (workspace / "c.txt").exists()
    assert "sandbox" not in rewound_confined
