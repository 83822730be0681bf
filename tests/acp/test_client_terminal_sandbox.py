"""The client's terminal runs a command in the same sandbox as a local one: the
``env -i`` starts bubblewrap, a write outside the workspace fails and is offered
the way out, and the approved second run goes through a terminal too, unconfined."""

from __future__ import annotations

import pytest

from agent_host.session.sandbox import mechanism

from .conftest import new_session, results, say
from .test_client_terminal import TERMINAL, TerminalClient, run

pytestmark = pytest.mark.skipif(
    not mechanism().available, reason=f"no sandbox: {mechanism().reason}"
)


async def test_a_terminal_command_is_confined_and_may_be_approved_out(spawn, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "escaped.txt"
    client = TerminalClient()
    steps = [{"tool_calls": [run(f"echo out > {target}")]}, {"text": "done"}]
    async with spawn(steps, "--approval", "auto", client=client, capabilities=TERMINAL) as (
        conn,
        _,
    ):
        sid = await new_session(conn, workspace)
        await say(conn, sid, "write outside")

    first, second = client.created
    assert first["command"] == "/usr/bin/env" and first["args"][0] == "-i"
    assert any(arg.endswith("bwrap") for arg in first["args"])
    assert "--unshare-net" in first["args"]
    assert not any(arg.endswith("bwrap") for arg in second["args"])
    (asked,) = client.permissions
    assert asked.title.startswith("Run without the sandbox:")
    (output,) = results(client, sid)
    assert "Read-only file system" in output
    assert "the user approved running it without the sandbox" in output
    assert target.read_text() == "out\n"
