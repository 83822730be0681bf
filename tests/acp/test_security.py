"""Issue 14's reproductions on the ACP front end: no secret reaches a command, a
terminal or an MCP server; what leaks anyway is masked in every output; the
environment policy is configurable (``--shell-env``, initialize ``_meta``); a
hostile grep does not hold up other requests; a command's leftovers end with it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import acp
import pytest
from acp import schema as s

from tests import secret_forms
from tests.session.mcp.conftest import APP

from .conftest import RecordingClient, new_session, results, say
from .test_client_terminal import TERMINAL, TerminalClient

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc"),
]

KEY = secret_forms.KEY
POLICY = {"shellEnvironment": {"include": ["VISIBLE_TOKEN"], "set": {"FORCED": "1"}}}
"""initialize's _meta["agent-host"]."""


SECRET_ENV = {
    **secret_forms.environment(),
    "MY_TOKEN": "my-token-value-42",
    "VISIBLE_TOKEN": "visible-token-value-7",
}


@pytest.fixture
def spawn(spawn):
    """The agents of these tests have the secrets in their environment, and run their
    commands and MCP servers unconfined (sandbox full): these tests read a process's
    /proc environ by its host pid, and test masking as the last defence against a
    command that reached the agent's (the default sandbox keeps it out of reach:
    tests/session/test_sandbox_escapes.py)."""

    def start(*args, **kwargs):
        return spawn(*args, env={**SECRET_ENV, "AGENT_HOST_SANDBOX": "full"}, **kwargs)

    return start


@pytest.fixture(autouse=True)
def secrets_in_env(monkeypatch):
    """And so has this process, which the test terminal client starts commands with."""
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)


def env_of(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def store_bytes(tmp_path: Path) -> bytes:
    files = sorted((tmp_path / "store").rglob("*"))
    return b"".join(p.read_bytes() for p in files if p.is_file())


def wire(client: RecordingClient) -> str:
    """Everything the agent notified, as JSON."""
    return json.dumps([u.model_dump(mode="json") for _, u in client.updates])


async def test_a_leaked_key_is_masked_in_every_acp_output(spawn, workspace, tmp_path, capfd):
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": secret_forms.LEAK}}]},
        # a model repeating a key it saw: its text reaches the client masked
        {"text": f"The key is {KEY.upper()}."},
    ]
    async with spawn(steps, "--approval", "auto", "--verbose") as (conn, client):
        sid = await new_session(conn, workspace)
        assert (await say(conn, sid, "show me the key")).stop_reason == "end_turn"
        # a bad request is logged with what it carried
        with pytest.raises(acp.RequestError):
            await conn.load_session(cwd=f"relative/{KEY}", session_id=sid, mcp_servers=[])
    [output] = results(client, sid)
    secret_forms.check_masked_output(output)
    assert "[redacted]" in client.text(sid)
    assert not secret_forms.leaks(wire(client)), secret_forms.leaks(wire(client))
    assert not secret_forms.leaks(store_bytes(tmp_path))
    captured = capfd.readouterr()
    assert "DEBUG" in captured.err
    assert not secret_forms.leaks(captured.err) and not secret_forms.leaks(captured.out)


async def test_a_terminal_in_the_editor_gets_the_policys_environment_only(spawn, workspace):
    # The test client starts terminals with its own environment, as an editor
    # would: the key is in it (os.environ, set above), and must not reach the command.
    client = TerminalClient()
    show = 'env; echo "key:${OPENAI_API_KEY:-absent}"'
    steps = [{"tool_calls": [{"name": "run_command", "arguments": {"command": show}}]}, {}]
    async with spawn(
        steps,
        "--approval",
        "auto",
        client=client,
        capabilities=TERMINAL,
        meta={"agent-host": POLICY},
    ) as (conn, _):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "show env")
    [created] = client.created
    sent = {e.name: e.value for e in created["env"]}
    assert "OPENAI_API_KEY" not in sent and "MY_TOKEN" not in sent
    assert sent["FORCED"] == "1" and sent["VISIBLE_TOKEN"] == "visible-token-value-7"
    assert not [a for a in created["args"] if KEY in a or "my-token-value" in a]
    [output] = results(client, sid)
    seen = env_of(output)
    assert "key:absent" in output and "MY_TOKEN" not in seen and "OPENAI_API_KEY" not in seen
    assert seen["FORCED"] == "1"
    # included, so the command had it; a secret still, so what it printed is masked
    assert seen["VISIBLE_TOKEN"] == "[redacted]"


async def test_local_commands_follow_the_policy_from_initialize_meta(spawn, workspace):
    steps = [{"tool_calls": [{"name": "run_command", "arguments": {"command": "env"}}]}, {}]
    async with spawn(steps, "--approval", "auto", meta={"agent-host": POLICY}) as (conn, client):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "show env")
    seen = env_of(results(client, sid)[0])
    assert seen["FORCED"] == "1" and seen["VISIBLE_TOKEN"] == "[redacted]"
    assert "OPENAI_API_KEY" not in seen and "MY_TOKEN" not in seen


async def test_a_bad_policy_in_initialize_meta_is_invalid_params_naming_the_field(spawn):
    bad = {"agent-host": {"shellEnvironment": {"set": {"X": 1}}}}
    with pytest.raises(acp.RequestError) as failed:
        async with spawn([], meta=bad):
            pass
    assert failed.value.code == -32602
    assert str(failed.value) == '_meta["agent-host"].shellEnvironment.set.X: must be a string'


def test_acp_shell_env_file_is_checked_at_start(tmp_path, workspace):
    bad = tmp_path / "env.json"
    bad.write_text('{"include": "GITHUB_TOKEN"}')
    run = subprocess.run(
        [sys.executable, "-m", "agent_host", "acp", "--shell-env", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 2 and "include must be a list" in run.stderr
    assert run.stdout == ""


async def test_acp_shell_env_file_sets_the_policy(spawn, workspace, tmp_path):
    policy = tmp_path / "env.json"
    policy.write_text(json.dumps({"set": {"FROM_FILE": "yes"}, "exclude": ["PATH"]}))
    steps = [{"tool_calls": [{"name": "run_command", "arguments": {"command": "/usr/bin/env"}}]}]
    async with spawn([*steps, {}], "--approval", "auto", "--shell-env", str(policy)) as (
        conn,
        client,
    ):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "show env")
    seen = env_of(results(client, sid)[0])
    assert seen["FROM_FILE"] == "yes" and "PATH" not in seen and "OPENAI_API_KEY" not in seen


async def test_mcp_servers_from_session_new_get_the_policys_environment(spawn, workspace):
    server = s.McpServerStdio(
        name="t",
        command=sys.executable,
        args=[APP, "stdio"],
        env=[s.EnvVariable(name="SERVER_TOKEN", value="server-token-A1b2C3d4")],
    )
    steps = [
        {"tool_calls": [{"name": "mcp__t__pid", "arguments": {}}]},
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "server-token-A1b2C3d4"}}]},
        {"text": "done"},
    ]
    async with spawn(steps, "--approval", "auto", meta={"agent-host": POLICY}) as (conn, client):
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[server])).session_id
        await say(conn, sid, "who are you")
        pid_text, echoed = results(client, sid)
        environ = Path(f"/proc/{int(pid_text)}/environ").read_bytes().decode()
    seen = dict(item.split("=", 1) for item in environ.split("\0") if "=" in item)
    assert "OPENAI_API_KEY" not in seen and "MY_TOKEN" not in seen
    assert seen["FORCED"] == "1" and seen["SERVER_TOKEN"] == "server-token-A1b2C3d4"
    # the config's own env values are secrets too: an MCP result echoing one is masked
    assert echoed == "[redacted]"


@pytest.mark.exclusive  # it times answers
async def test_a_hostile_grep_does_not_hold_up_session_list(spawn, workspace):
    (workspace / "a.txt").write_text("a" * 30 + "!\n")
    greps = [{"pattern": "(a+)+$"}, {"pattern": "(?=a)(a+)+$"}]
    steps = [{"tool_calls": [{"name": "grep", "arguments": g}]} for g in greps] + [{}]
    async with spawn(steps, "--approval", "auto") as (conn, client):
        sid = await new_session(conn, workspace)
        turn = asyncio.create_task(say(conn, sid, "search"))
        times = []
        while not turn.done() or not times:
            started = time.monotonic()
            await asyncio.wait_for(conn.list_sessions(), 30)
            times.append(time.monotonic() - started)
            await asyncio.sleep(0.05)
        await turn
    assert max(times) < 2.0, f"session/list waited {max(times):.1f} s"
    assert "took too long" in results(client, sid)[1]


async def test_a_commands_background_process_ends_with_the_call(spawn, workspace):
    command = "sleep 1003.25 >/dev/null 2>&1 & echo started"
    steps = [{"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}, {}]
    async with spawn(steps, "--approval", "auto") as (conn, client):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "start it")
        assert "started" in results(client, sid)[0]
        left = [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p) == "sleep 1003.25"]
    assert not left, "the background sleep outlived its command"


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""
