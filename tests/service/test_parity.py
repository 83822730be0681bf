"""Both front ends agree: the same scenario, run through a real ``agent-host serve``
(the LSP dialect) and a real ``agent-host acp`` (the official ACP SDK's client) on
the scripted model, gives the same results field by field and the same error kinds.

Each scenario is one row of :data:`SCENARIOS`: its script and a function that drives
a :class:`FrontEnd` and returns what it observed, as camelCase JSON. The LSP dialect
names an operation ``session/<op>``, ACP ``_agent-host/<op>`` (:data:`OPERATIONS`);
params and results are the same camelCase JSON on both. Errors are compared by the
name of their code in each dialect's own table, never by number: the dialects may
number a kind differently (ACP's missing session, for one).

A new operation is a new row of OPERATIONS and a scenario that uses it.

Where the dialects differ on purpose, and so are not compared:

- ACP's slash commands (``/rewind`` ...) answer in text a person reads, not JSON
  (tests/acp/test_rewind.py); the ``_agent-host/*`` methods are what is compared.
- ``unrevertedBuffers`` is always ``[]`` over ACP: its client's files are written
  through ``fs/write_text_file``, never left as editor buffers; the scenarios open no
  buffers on the LSP side either, so the field is compared all the same.
- ``session/delete`` answers null, ``_agent-host/delete`` ``{}`` (the SDK wants an
  object): both read as "done".
- A turn: ``session/send`` answers its text whole, ACP streams it as
  ``agent_message_chunk`` updates; ACP names the engine's ``max_turns``
  ``max_turn_requests``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from agent_host.session.sandbox import mechanism
from tests.server.conftest import wait_until
from tests.service.parity_front_ends import (
    FRONT_ENDS,
    Failure,
    FrontEnd,
)
from tests.session.mcp.conftest import APP

# -- scenarios


def write_a(content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": "a.py", "content": content}}


TWO_EDITS = [
    {"tool_calls": [write_a("v1\n")]},
    {"text": "Wrote v1."},
    {"tool_calls": [write_a("v2\n")]},
    {"text": "Wrote v2."},
]

Run = Callable[[FrontEnd, Path], Awaitable[dict[str, Any]]]


@attrs.frozen
class Scenario:
    name: str
    steps: list[dict[str, Any]]
    run: Run
    sandbox: str | None = None
    """The sandbox policy both servers run under (None: the default)."""


def comparable(checkpoints: Any) -> Any:
    """A checkpoint list without ``createdAt`` (each run has its own clock), which
    must be there all the same."""
    if isinstance(checkpoints, Failure):
        return checkpoints
    listed = checkpoints["checkpoints"]
    assert all(isinstance(c.pop("createdAt"), str) for c in listed), listed
    return listed


async def two_turns(fe: FrontEnd) -> tuple[str, list[dict[str, Any] | Failure]]:
    sid = await fe.new()
    turns = [await fe.send(sid, "write v1"), await fe.send(sid, "write v2")]
    return sid, turns


async def send_with_a_tool_call(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid = await fe.new()
    turn = await fe.send(sid, "write v1")
    listed = comparable(await fe.call("checkpoints", {"sessionId": sid}))
    assert (ws / "a.py").read_text() == "v1\n"
    return {"turn": turn, "file": (ws / "a.py").read_text(), "checkpoints": listed}


async def checkpoints_of_two_turns(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, turns = await two_turns(fe)
    listed = comparable(await fe.call("checkpoints", {"sessionId": sid}))
    assert [c["prompt"] for c in listed] == ["write v1", "write v2"]
    assert all(c["files"] == ["a.py"] for c in listed)
    assert {"fromCommands", "notCaptured", "externalTools"} <= set(listed[0])
    return {"turns": turns, "checkpoints": listed}


async def checkpoints_of_a_command(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    # fromCommands: a file the shell changed, not the agent's file tools; notCaptured:
    # what it changed where capture does not look (node_modules/).
    sid = await fe.new()
    turn = await fe.send(sid, "make b")
    listed = comparable(await fe.call("checkpoints", {"sessionId": sid}))
    assert listed[0]["fromCommands"] == ["b.txt"], listed
    assert listed[0]["notCaptured"] == ["node_modules/"], listed
    restored = await fe.call("restore", {"sessionId": sid, "seq": listed[0]["seq"]})
    assert restored["notCaptured"] == ["node_modules/"], restored
    if mechanism().available:  # it ran in the sandbox: nothing outside can have changed
        assert listed[0]["unconfined"] == [] == restored["unconfined"], (listed, restored)
    return {
        "turn": turn,
        "checkpoints": listed,
        "restored": restored,
        "bAfterRestore": (ws / "b.txt").exists(),
    }


async def checkpoints_of_an_mcp_tool(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    # externalTools: the MCP tools a turn called (what they did outside, no restore undoes).
    server = {"name": "t", "command": sys.executable, "args": [APP, "stdio"], "env": []}
    sid = await fe.new(server)
    turn = await fe.send(sid, "echo")
    listed = comparable(await fe.call("checkpoints", {"sessionId": sid}))
    assert listed[0]["externalTools"] == ["mcp__t__echo"], listed
    if mechanism().available:  # its server runs in the sandbox
        assert listed[0]["unconfined"] == [], listed
    return {"turn": turn, "checkpoints": listed}


OUTSIDE = "echo out > ../outside.txt"
"""A write the sandbox stops (the workspace's parent is not writable), which both
test clients let run again without it."""


async def unconfined_runs(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    # unconfined: what a turn ran outside the sandbox -- here the way out, approved.
    sid = await fe.new()
    turns = [await fe.send(sid, "make b"), await fe.send(sid, "write outside")]
    listed = comparable(await fe.call("checkpoints", {"sessionId": sid}))
    assert [c["unconfined"] for c in listed] == [[], [OUTSIDE]], listed
    assert (ws.parent / "outside.txt").read_text() == "out\n"
    first, second = listed[0]["seq"], listed[1]["seq"]
    preview = await fe.call("restore", {"sessionId": sid, "seq": first, "dryRun": True})
    preview["preview"]["checkpoint"].pop("createdAt")
    assert preview["preview"]["unconfined"] == [OUTSIDE], preview
    restored = await fe.call("restore", {"sessionId": sid, "seq": second})
    assert restored["unconfined"] == [OUTSIDE], restored
    return {"turns": turns, "checkpoints": listed, "preview": preview, "restored": restored}


async def unconfined_under_full(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    # unconfined under the full policy: every command is named.
    sid = await fe.new()
    turn = await fe.send(sid, "make b")
    listed = comparable(await fe.call("checkpoints", {"sessionId": sid}))
    assert listed[0]["unconfined"] == ["echo b > b.txt"], listed
    restored = await fe.call("restore", {"sessionId": sid, "seq": listed[0]["seq"]})
    assert restored["unconfined"] == ["echo b > b.txt"], restored
    return {"turn": turn, "checkpoints": listed, "restored": restored}


async def restore_then_undo(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    first = (await fe.call("checkpoints", {"sessionId": sid}))["checkpoints"][0]["seq"]
    restored = await fe.call("restore", {"sessionId": sid, "seq": first})
    after_restore = (ws / "a.py").read_text()
    undone = await fe.call("undoRestore", {"sessionId": sid})
    after_undo = (ws / "a.py").read_text()
    assert restored["restoredFiles"] == ["a.py"] and after_restore == "print('a')\n"
    assert undone["restoredFiles"] == ["a.py"] and after_undo == "v2\n"
    return {
        "restored": restored,
        "afterRestore": after_restore,
        "undone": undone,
        "afterUndo": after_undo,
        "checkpointsAfter": comparable(await fe.call("checkpoints", {"sessionId": sid})),
    }


async def restore_with_a_conflict(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    second = (await fe.call("checkpoints", {"sessionId": sid}))["checkpoints"][1]["seq"]
    (ws / "a.py").write_text("mine\n")  # the user, after the agent's last write
    kept = await fe.call("restore", {"sessionId": sid, "seq": second})
    content_kept = (ws / "a.py").read_text()
    undone = await fe.call("undoRestore", {"sessionId": sid})
    forced = await fe.call("restore", {"sessionId": sid, "seq": second, "force": True})
    assert kept["conflicts"] == ["a.py"] and content_kept == "mine\n"
    assert forced["restoredFiles"] == ["a.py"]
    return {
        "kept": kept,
        "contentKept": content_kept,
        "undone": undone,
        "forced": forced,
        "contentForced": (ws / "a.py").read_text(),
    }


async def restore_conversation_only(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    first = (await fe.call("checkpoints", {"sessionId": sid}))["checkpoints"][0]["seq"]
    restored = await fe.call("restore", {"sessionId": sid, "seq": first, "files": False})
    assert restored["restoredFiles"] == [] and restored["removedEvents"] > 0
    return {
        "restored": restored,
        "file": (ws / "a.py").read_text(),
        "checkpoints": comparable(await fe.call("checkpoints", {"sessionId": sid})),
    }


async def fork(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    second = (await fe.call("checkpoints", {"sessionId": sid}))["checkpoints"][1]["seq"]
    whole = await fe.call("fork", {"sessionId": sid})
    part = await fe.call("fork", {"sessionId": sid, "seq": second})  # before "write v2"
    assert whole["sessionId"] not in (sid, part["sessionId"])
    part_listed = await fe.call("checkpoints", {"sessionId": part["sessionId"]})
    assert [c["prompt"] for c in part_listed["checkpoints"]] == ["write v1"]
    return {
        "fields": sorted(whole),
        "wholeCheckpoints": comparable(
            await fe.call("checkpoints", {"sessionId": whole["sessionId"]})
        ),
        "partCheckpoints": comparable(
            await fe.call("checkpoints", {"sessionId": part["sessionId"]})
        ),
        "source": comparable(await fe.call("checkpoints", {"sessionId": sid})),
    }


async def compact(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    done = await fe.call("compact", {"sessionId": sid, "instructions": "keep the file names"})
    assert set(done) == {"before", "after", "compacted"}
    return {"compacted": done, "file": (ws / "a.py").read_text()}


async def delete(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    deleted = await fe.call("delete", {"sessionId": sid})
    # The session goes (unknown_session asks after it), its edits stay: deleting is
    # not rewinding.
    return {"deleted": deleted, "file": (ws / "a.py").read_text()}


async def unknown_session(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    await fe.call("delete", {"sessionId": sid})
    never = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    found = {
        f"{op}({which})": await fe.call(op, {"sessionId": unknown, **extra})
        for which, unknown in [("never stored", never), ("deleted", sid)]
        for op, extra in [
            ("checkpoints", {}),
            ("restore", {"seq": 1}),
            ("undoRestore", {}),
            ("compact", {}),
            ("fork", {}),
            ("delete", {}),
        ]
    }
    assert set(found.values()) == {Failure("SESSION_NOT_FOUND")}, found
    return found


async def errors(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    found = {
        "unknownCheckpoint": await fe.call("restore", {"sessionId": sid, "seq": 9999}),
        "nothingToUndo": await fe.call("undoRestore", {"sessionId": sid}),
        "seqNotANumber": await fe.call("restore", {"sessionId": sid, "seq": "one"}),
        "restoreOfNothing": await fe.call(
            "restore", {"sessionId": sid, "seq": 2, "files": False, "conversation": False}
        ),
        "noSessionId": await fe.call("checkpoints", {}),
        "sessionIdNotAString": await fe.call("checkpoints", {"sessionId": 7}),
    }
    assert found["unknownCheckpoint"] == Failure("CHECKPOINT_NOT_FOUND")
    assert found["seqNotANumber"] == Failure("INVALID_PARAMS")
    assert found["noSessionId"] == Failure("INVALID_PARAMS")
    assert found["restoreOfNothing"] == Failure("INVALID_PARAMS")
    assert isinstance(found["nothingToUndo"], Failure)
    assert (ws / "a.py").read_text() == "v2\n"  # no failed call touched the file
    return found


async def turn_in_progress(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid = await fe.new()
    slow = asyncio.ensure_future(fe.send(sid, "take your time"))
    # The first words streamed: the turn holds the session, and waits 3 s before
    # its next words.
    await wait_until(lambda: fe.streamed(sid) != "", timeout=30, what="the turn's first words")
    during = {
        "send": await fe.send(sid, "and another thing"),
        "restore": await fe.call("restore", {"sessionId": sid, "seq": 1}),
    }
    first = await slow
    assert during["send"] == Failure("TURN_IN_PROGRESS")
    return {"during": during, "first": first}


def write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


EDITS_AND_A_NEW_FILE = [
    {"tool_calls": [write("a.py", "v1\n"), write("b.txt", "b\n")]},
    {"text": "Wrote v1 and b."},
    {"tool_calls": [write("a.py", "v2\n")]},
    {"text": "Wrote v2."},
]


async def changes_preview_and_paths(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, turns = await two_turns(fe)
    listed = (await fe.call("checkpoints", {"sessionId": sid}))["checkpoints"]
    first, second = listed[0]["seq"], listed[1]["seq"]
    found = {
        "turn": await fe.call("changes", {"sessionId": sid, "seq": first}),
        "last": await fe.call("changes", {"sessionId": sid}),
        "range": await fe.call("changes", {"sessionId": sid, "fromSeq": first}),
        "rangeTo": await fe.call("changes", {"sessionId": sid, "fromSeq": first, "toSeq": second}),
        "notACheckpoint": await fe.call("changes", {"sessionId": sid, "seq": 9999}),
        "seqAndRange": await fe.call("changes", {"sessionId": sid, "seq": first, "fromSeq": 1}),
    }
    (ws / "b.txt").write_text("the user's b\n")
    preview = await fe.call("restore", {"sessionId": sid, "seq": first, "dryRun": True})
    for shown in preview["preview"]["checkpoint"], *listed:
        shown.pop("createdAt")
    chosen = {"sessionId": sid, "seq": first, "paths": ["a.py"]}
    preview_a = await fe.call("restore", {**chosen, "dryRun": True})
    preview_a["preview"]["checkpoint"].pop("createdAt")
    unknown = await fe.call("restore", {**chosen, "paths": ["nope.txt"]})
    restored = await fe.call("restore", chosen)
    assert found["turn"]["files"][1]["path"] == "b.txt"
    assert [f["conflict"] for f in preview["preview"]["files"]] == [False, True]
    assert found["notACheckpoint"] == Failure("CHECKPOINT_NOT_FOUND")
    assert found["seqAndRange"] == unknown == Failure("INVALID_PARAMS")
    return {
        "turns": turns,
        "changes": found,
        "preview": preview,
        "previewOfA": preview_a,
        "unknownPath": unknown,
        "restored": restored,
        "disk": {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()},
    }


async def revert_files(fe: FrontEnd, ws: Path) -> dict[str, Any]:
    sid, _ = await two_turns(fe)
    first = (await fe.call("checkpoints", {"sessionId": sid}))["checkpoints"][0]["seq"]
    params = {"sessionId": sid, "seq": first, "paths": ["b.txt"]}
    dry = await fe.call("revertFiles", {**params, "dryRun": True})
    dry["preview"]["checkpoint"].pop("createdAt")
    done = await fe.call("revertFiles", params)
    after = {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}
    undone = await fe.call("undoRestore", {"sessionId": sid})
    assert not (ws / "b.txt").exists() or after.get("b.txt") is None
    return {
        "dryRun": dry,
        "done": done,
        "after": after,
        "undone": undone,
        "afterUndo": {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()},
        "checkpoints": comparable(await fe.call("checkpoints", {"sessionId": sid})),
        "unknownPath": await fe.call("revertFiles", {**params, "paths": ["a.txt"]}),
        "noPaths": await fe.call("revertFiles", {"sessionId": sid, "seq": first}),
    }


MAKE_B = "echo b > b.txt; mkdir -p node_modules/p; echo x > node_modules/p/i.js"


def run(command: str) -> dict[str, Any]:
    return {"name": "run_command", "arguments": {"command": command}}


SCENARIOS = [
    Scenario("send_with_a_tool_call", TWO_EDITS, send_with_a_tool_call),
    Scenario("checkpoints", TWO_EDITS, checkpoints_of_two_turns),
    Scenario(
        "checkpoints_from_commands",
        [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": MAKE_B}}]},
            {"text": "Made b."},
        ],
        checkpoints_of_a_command,
    ),
    Scenario(
        "checkpoints_from_mcp_tools",
        [
            {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "hi"}}]},
            {"text": "Echoed."},
        ],
        checkpoints_of_an_mcp_tool,
    ),
    pytest.param(
        Scenario(
            "unconfined_runs",
            [
                {"tool_calls": [run("echo b > b.txt")]},
                {"text": "Made b."},
                {"tool_calls": [run(OUTSIDE)]},
                {"text": "Wrote outside."},
            ],
            unconfined_runs,
        ),
        marks=pytest.mark.skipif(not mechanism().available, reason="no sandbox here"),
        id="unconfined_runs",
    ),
    Scenario(
        "unconfined_under_full",
        [{"tool_calls": [run("echo b > b.txt")]}, {"text": "Made b."}],
        unconfined_under_full,
        sandbox="full",
    ),
    Scenario("restore_then_undo", TWO_EDITS, restore_then_undo),
    Scenario("restore_with_a_conflict", TWO_EDITS, restore_with_a_conflict),
    Scenario("restore_conversation_only", TWO_EDITS, restore_conversation_only),
    Scenario("changes_preview_and_paths", EDITS_AND_A_NEW_FILE, changes_preview_and_paths),
    Scenario("revert_files", EDITS_AND_A_NEW_FILE, revert_files),
    Scenario("fork", TWO_EDITS, fork),
    Scenario("compact", TWO_EDITS, compact),
    Scenario("delete", TWO_EDITS, delete),
    Scenario("errors", TWO_EDITS, errors),
    pytest.param(
        Scenario("unknown_session", TWO_EDITS, unknown_session),
        # A disagreement the suite keeps in view: the LSP dialect's service opens an
        # id it never stored as an empty session (checkpoints [], compact a no-op,
        # a session/send creates it), where ACP answers SessionNotFound. Strict: the
        # day the LSP dialect refuses unknown ids too, this passes and the mark goes.
        marks=pytest.mark.xfail(
            strict=True, reason="LSP dialect: an unknown session id is not SessionNotFound"
        ),
        id="unknown_session",
    ),
    Scenario(
        "turn_in_progress",
        [{"text": "Slowly but surely, word by word.", "delay_ms": 3000}],
        turn_in_progress,
    ),
]


async def observe(front_end: str, scenario: Scenario, tmp_path: Path) -> dict[str, Any]:
    home = tmp_path / front_end
    workspace = home / "ws"
    workspace.mkdir(parents=True)
    (workspace / "a.py").write_text("print('a')\n")
    script = home / "script.json"
    script.write_text(json.dumps({"steps": scenario.steps}))
    model = f"scripted:{script}"
    async with FRONT_ENDS[front_end](workspace, home / "store", model, scenario.sandbox) as fe:
        return await scenario.run(fe, workspace)


@pytest.mark.parametrize(
    "scenario", SCENARIOS, ids=lambda s: s.name if isinstance(s, Scenario) else None
)
async def test_both_front_ends_agree(scenario: Scenario, tmp_path: Path) -> None:
    lsp = await observe("lsp", scenario, tmp_path)
    acp_seen = await observe("acp", scenario, tmp_path)
    assert acp_seen == lsp
