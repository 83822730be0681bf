"""The LSP dialect's way out of the sandbox: a command the sandbox stopped reaches
the client as ``session/requestPermission`` with ``sandboxDenial``; allowing runs it
again unconfined (once, or always for that command), rejecting leaves it stopped."""

from __future__ import annotations

import pytest

from agent_host.session.sandbox import mechanism

from .conftest import request

pytestmark = pytest.mark.skipif(
    not mechanism().available, reason=f"no sandbox: {mechanism().reason}"
)


def command(text: str, call_id: str = "c1") -> dict:
    return {"id": call_id, "name": "run_command", "arguments": {"command": text}}


def tool_outputs(client) -> list[str]:
    return [e["data"]["output"] for e in client.events if e["kind"] == "tool_result"]


async def unconfined(client) -> tuple[list[bool], list[list[str]]]:
    """Per tool result, whether it ran unconfined; per checkpoint, what ran so."""
    results = [e for e in client.events if e["kind"] == "tool_result"]
    listed = await request(client, "session/checkpoints", {"sessionId": results[0]["sessionId"]})
    return (
        [e["data"]["unconfined"] for e in results],
        [c["unconfined"] for c in listed["checkpoints"]],
    )


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


async def test_an_approved_command_runs_again_without_the_sandbox(agents, outside):
    target = outside / "escaped.txt"
    client = await agents(
        [{"tool_calls": [command(f"echo out > {target}")]}, {"text": "done"}],
        approval="auto",
        permission=lambda params: "allow_once",
    )
    await request(client, "session/send", {"prompt": "write outside"})
    (asked,) = client.permission_requests
    assert asked["tool"] == "run_command" and asked["kind"] == "command"
    assert "wrote where the sandbox lets no command write" in asked["sandboxDenial"]
    assert target.read_text() == "out\n"
    (output,) = tool_outputs(client)
    assert "Read-only file system" in output  # the first, confined run
    assert "the user approved running it without the sandbox" in output
    assert await unconfined(client) == ([True], [[f"echo out > {target}"]])


async def test_a_rejected_command_stays_stopped_and_the_model_is_told(agents, outside):
    target = outside / "escaped.txt"
    client = await agents(
        [{"tool_calls": [command(f"echo out > {target}")]}, {"text": "done"}],
        approval="auto",
        permission=lambda params: "reject_once",
    )
    await request(client, "session/send", {"prompt": "write outside"})
    assert len(client.permission_requests) == 1
    assert not target.exists()
    (output,) = tool_outputs(client)
    assert "[the sandbox stopped this command:" in output
    assert "did not approve running it without the sandbox" in output
    assert await unconfined(client) == ([False], [[]])  # only the confined run ran


async def test_always_runs_that_command_unconfined_without_asking_again(agents, outside):
    target = outside / "log.txt"
    text = f"echo line >> {target}"
    other = f"echo other > {outside}/other.txt"
    client = await agents(
        [
            {"tool_calls": [command(text, "c1")]},
            {"tool_calls": [command(text, "c2")]},
            {"tool_calls": [command(other, "c3")]},
            {"text": "done"},
        ],
        approval="auto",
        permission=lambda params: (
            "allow_always" if params["arguments"]["command"] == text else "reject_once"
        ),
    )
    await request(client, "session/send", {"prompt": "append twice"})
    assert target.read_text() == "line\nline\n"
    # Asked once for that command; another command is asked about on its own.
    assert [p["arguments"]["command"] for p in client.permission_requests] == [text, other]
    assert "the user always allows it" in tool_outputs(client)[1]
    assert not (outside / "other.txt").exists()


async def test_the_sandbox_option_full_runs_commands_unconfined(agents, outside):
    target = outside / "free.txt"
    client = await agents(
        [{"tool_calls": [command(f"echo out > {target}")]}, {"text": "done"}],
        approval="auto",
        options={"sandbox": "full"},
    )
    await request(client, "session/send", {"prompt": "write outside"})
    assert target.read_text() == "out\n" and not client.permission_requests
    assert await unconfined(client) == ([True], [[f"echo out > {target}"]])


async def test_a_bad_sandbox_option_is_refused_naming_the_field(agents):
    with pytest.raises(Exception, match=r"initializationOptions\.sandbox\.network"):
        await agents([{"text": "x"}], options={"sandbox": {"network": "yes"}})
