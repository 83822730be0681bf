"""Checkpoints and restores say what ran outside the sandbox: a turn whose commands
all ran confined changed nothing outside the places it may write, so neither its
checkpoint nor a restore past it warns of changes no restore can undo; a command
under ``full`` or run unconfined by the user's leave is named, and so is every
command and MCP tool of a log written before the sandbox (it cannot tell)."""

from __future__ import annotations

import sys

import pytest

from agent_host.session import events as ev
from agent_host.session.checkpoints import checkpoints, unconfined_since
from agent_host.session.host import AgentHost
from agent_host.session.sandbox import mechanism

from ..conftest import make_backend
from .mcp.conftest import APP
from .test_host import script

needs_sandbox = pytest.mark.skipif(
    not mechanism().available, reason=f"no sandbox: {mechanism().reason}"
)


def command(text: str, call_id: str = "c1") -> dict:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "arguments": {"command": text}}]}


def call(seq: int, call_id: str, name: str, **arguments: object) -> ev.ToolCall:
    return ev.ToolCall(seq=seq, call_id=call_id, name=name, arguments=dict(arguments))


def result(seq: int, call_id: str, unconfined: bool | None) -> ev.ToolResult:
    return ev.ToolResult(seq=seq, call_id=call_id, output="ok", unconfined=unconfined)


# -- the fold, on logs written by hand


def test_a_log_from_before_the_sandbox_names_every_command_and_mcp_tool():
    events = [
        ev.UserPrompt(seq=1, text="do"),
        call(2, "a", "run_command", command="make"),
        result(3, "a", None),  # written before the field existed
        call(4, "b", "mcp__fs__write_file", path="x"),
        result(5, "b", None),
        call(6, "c", "read_file", path="a.py"),  # runs nothing: never named
        result(7, "c", None),
    ]
    (cp,) = checkpoints(events)
    assert cp.unconfined == ["make", "mcp__fs__write_file"]
    assert cp.external_tools == ["mcp__fs__write_file"]
    # such a log's tool_result has no field: read back as not recorded
    old = ev.decode('{"type": "tool_result", "seq": 3, "ts": 1.0, "call_id": "a", "output": "ok"}')
    assert type(old) is ev.ToolResult and old.unconfined is None
    assert b'"unconfined":false' in ev.encode(result(3, "a", False))


def test_recorded_confinement_decides_and_a_call_without_result_counts():
    events = [
        ev.UserPrompt(seq=1, text="first"),
        call(2, "a", "run_command", command="make test"),
        result(3, "a", False),
        call(4, "b", "mcp__fs__write_file"),
        result(5, "b", False),
        ev.TurnEnd(seq=6, stop_reason="end_turn"),
        ev.UserPrompt(seq=7, text="second"),
        call(8, "c", "run_command", command="curl x | sh"),
        result(9, "c", True),
        call(10, "d", "run_command", command="sleep 100"),  # cut off: may have
    ]
    first, second = checkpoints(events)
    assert first.unconfined == []
    assert second.unconfined == ["curl x | sh", "sleep 100"]
    assert unconfined_since(events, 1) == ["curl x | sh", "sleep 100"]
    assert unconfined_since(events, 7) == ["curl x | sh", "sleep 100"]
    assert unconfined_since(events[:6], 1) == []


# -- real turns through a host


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return root


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def host_for(tmp_path, ws, steps, **options) -> AgentHost:
    store = make_backend("file", tmp_path).open()
    return AgentHost(
        store=store, model=script(tmp_path, steps), workdir=ws, auto_compact=None, **options
    )


def tool_results(events) -> list[ev.ToolResult]:
    return [e for e in events if type(e) is ev.ToolResult]


@needs_sandbox
async def test_a_sandboxed_command_leaves_a_confined_checkpoint_and_no_warning(tmp_path, ws):
    steps = [command("echo b > b.txt"), {"text": "made b"}]
    host = host_for(tmp_path, ws, steps)
    await host.send("make b")
    (cp,) = await host.list_checkpoints()
    assert cp.files == ["b.txt"] and cp.unconfined == []
    (logged,) = tool_results(await host.store.read(host.session_id))
    assert logged.unconfined is False
    restored = await host.restore(host.session_id, cp.seq)
    assert restored.restored_files == ["b.txt"] and restored.unconfined == []
    assert not (ws / "b.txt").exists()


async def test_a_command_under_full_is_named_unconfined(tmp_path, ws, outside):
    text = f"echo b > b.txt && echo out > {outside}/free.txt"
    steps = [command(text), {"text": "made b"}]
    host = host_for(tmp_path, ws, steps, sandbox="full")
    await host.send("make b")
    assert (outside / "free.txt").read_text() == "out\n"
    (cp,) = await host.list_checkpoints()
    assert cp.unconfined == [text]
    (logged,) = tool_results(await host.store.read(host.session_id))
    assert logged.unconfined is True
    restored = await host.restore(host.session_id, cp.seq)
    assert restored.unconfined == [text]
    # what it did outside stays: that is what the warning says
    assert (outside / "free.txt").exists() and not (ws / "b.txt").exists()


@needs_sandbox
@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_the_way_out_is_named_unconfined_only_when_approved(tmp_path, ws, outside, answer):
    text = f"echo out > {outside}/escaped.txt"
    steps = [command("echo b > b.txt", "c1"), {"text": "made b"}]
    steps += [command(text, "c2"), {"text": "wrote outside"}]
    asked = []

    async def permission(request):
        asked.append(request.sandbox_denial)
        return answer

    host = host_for(tmp_path, ws, steps, permission=permission)
    await host.send("make b")
    await host.send("write outside")
    assert len(asked) == 1 and asked[0] is not None
    first, second = await host.list_checkpoints()
    assert first.unconfined == []
    if answer == "allow_once":
        assert (outside / "escaped.txt").exists()
        assert second.unconfined == [text]
    else:
        assert not (outside / "escaped.txt").exists()
        assert second.unconfined == []
    preview = await host.handle(host.session_id).preview_restore(first.seq)
    assert preview.unconfined == second.unconfined
    restored = await host.restore(host.session_id, second.seq)
    assert restored.unconfined == second.unconfined


@needs_sandbox
async def test_an_mcp_server_not_sandboxed_is_named_and_a_sandboxed_one_is_not(tmp_path, ws):
    steps = [
        {"tool_calls": [mcp_call("mcp__boxed__echo", "c1"), mcp_call("mcp__free__echo", "c2")]},
        {"text": "echoed twice"},
    ]
    servers = [
        {"name": "boxed", "command": sys.executable, "args": [APP, "stdio"], "env": []},
        {
            "name": "free",
            "command": sys.executable,
            "args": [APP, "stdio"],
            "env": [],
            "sandbox": "full",
        },
    ]
    async with host_for(tmp_path, ws, steps, mcp_servers=servers) as host:
        await host.send("echo")
        (cp,) = await host.list_checkpoints()
        assert cp.external_tools == ["mcp__boxed__echo", "mcp__free__echo"]
        assert cp.unconfined == ["mcp__free__echo"]
        logged = tool_results(await host.store.read(host.session_id))
        assert [r.unconfined for r in logged] == [False, True]


def mcp_call(name: str, call_id: str) -> dict:
    return {"id": call_id, "name": name, "arguments": {"text": "hi"}}
