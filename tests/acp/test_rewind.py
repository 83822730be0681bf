"""Checkpoints and rewind over ACP: slash commands and _agent-host/* extension methods."""

from __future__ import annotations

import acp
import pytest

from .conftest import new_session, say


def write_a(content: str) -> dict:
    return {"name": "write_file", "arguments": {"path": "a.py", "content": content}}


STEPS = [
    {"tool_calls": [write_a("v1\n")]},
    {"text": "Wrote v1."},
    {"tool_calls": [write_a("v2\n")]},
    {"text": "Wrote v2."},
]


async def two_turns(conn, workspace) -> str:
    sid = await new_session(conn, workspace)
    await say(conn, sid, "write v1")
    await say(conn, sid, "write v2")
    assert (workspace / "a.py").read_text() == "v2\n"
    return sid


async def test_slash_commands_list_rewind_and_undo(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, client):
        sid = await two_turns(conn, workspace)

        client.updates.clear()
        answer = await say(conn, sid, "/checkpoints")
        listing = client.text(sid)

        client.updates.clear()
        await say(conn, sid, "/rewind -1")
        rewound = client.text(sid)
        after_rewind = (workspace / "a.py").read_text()

        client.updates.clear()
        await say(conn, sid, "/undo-rewind")
        undone = client.text(sid)
        after_undo = (workspace / "a.py").read_text()

        client.updates.clear()
        await say(conn, sid, "/undo-rewind")
        nothing = client.text(sid)

        client.updates.clear()
        await say(conn, sid, "/rewind 999")
        no_such = client.text(sid)

    assert answer.stop_reason == "end_turn"
    assert "'write v1'" in listing and "'write v2'" in listing and "a.py" in listing
    assert "Rewound to just before 'write v2'" in rewound and "a.py" in rewound
    assert after_rewind == "v1\n"
    assert "Undid the last rewind" in undone
    assert after_undo == "v2\n"
    assert nothing.startswith("Nothing to undo")
    assert no_such.startswith("No checkpoint '999'")


async def test_extension_methods_restore_and_undo(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, _):
        sid = await two_turns(conn, workspace)
        listed = await conn.ext_method("agent-host/checkpoints", {"sessionId": sid})
        first = listed["checkpoints"][0]
        restored = await conn.ext_method(
            "agent-host/restore", {"sessionId": sid, "seq": first["seq"]}
        )
        after_restore = (workspace / "a.py").read_text()
        undone = await conn.ext_method("agent-host/undoRestore", {"sessionId": sid})
        after_undo = (workspace / "a.py").read_text()

        await conn.ext_method("agent-host/delete", {"sessionId": sid})
        with pytest.raises(acp.RequestError) as gone:
            await conn.ext_method("agent-host/checkpoints", {"sessionId": sid})

    assert [c["prompt"] for c in listed["checkpoints"]] == ["write v1", "write v2"]
    assert first["files"] == ["a.py"] and first["createdAt"]
    assert restored["restoredFiles"] == ["a.py"]
    assert restored["removedEvents"] > 0 and restored["conflicts"] == []
    assert after_restore == "print('a')\n"
    assert undone["restoredFiles"] == ["a.py"] and undone["restoredEvents"] > 0
    assert after_undo == "v2\n"
    assert gone.value.code == -32002


async def test_a_file_changed_by_the_user_is_a_conflict_unless_forced(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, _):
        sid = await two_turns(conn, workspace)
        (workspace / "a.py").write_text("mine\n")
        seq = (await conn.ext_method("agent-host/checkpoints", {"sessionId": sid}))["checkpoints"][
            1
        ]["seq"]
        kept = await conn.ext_method("agent-host/restore", {"sessionId": sid, "seq": seq})
        content_kept = (workspace / "a.py").read_text()
        await conn.ext_method("agent-host/undoRestore", {"sessionId": sid})
        forced = await conn.ext_method(
            "agent-host/restore", {"sessionId": sid, "seq": seq, "force": True}
        )

    assert kept["conflicts"] == ["a.py"] and content_kept == "mine\n"
    assert forced["restoredFiles"] == ["a.py"]
    assert (workspace / "a.py").read_text() == "v1\n"


async def test_compact_and_fork_by_slash_command(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, client):
        sid = await two_turns(conn, workspace)
        client.updates.clear()
        await say(conn, sid, "/compact keep the file names")
        compacted = client.text(sid)
        client.updates.clear()
        await say(conn, sid, "/fork")
        forked = client.text(sid)
        listed = await conn.list_sessions(cwd=str(workspace))

    assert compacted.startswith(("Compacted the conversation", "Nothing to compact"))
    assert forked.startswith("Forked this session as ")
    fork_id = forked.removeprefix("Forked this session as ").split(";")[0]
    assert fork_id in {s.session_id for s in listed.sessions}


async def test_initialize_advertises_every_extension_method_and_each_answers(spawn, workspace):
    from agent_host.acp.extensions import EXTENSIONS

    async with spawn(STEPS, "--approval", "auto") as (conn, _):
        answer = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        advertised = answer.agent_capabilities.field_meta["agent-host"]["methods"]
        sid = await two_turns(conn, workspace)
        unknown = {}
        for method in advertised:
            # A params error, not method-not-found: every advertised name is routed.
            with pytest.raises(acp.RequestError) as caught:
                await conn.ext_method(method.removeprefix("_"), {"sessionId": 7})
            unknown[method] = caught.value.code
        with pytest.raises(acp.RequestError) as missing:
            await conn.ext_method("agent-host/noSuchMethod", {"sessionId": sid})

    assert advertised == [m.name for m in EXTENSIONS]
    assert {
        "_agent-host/checkpoints",
        "_agent-host/restore",
        "_agent-host/restorePreview",
        "_agent-host/changes",
        "_agent-host/revertFiles",
        "_agent-host/undoRestore",
        "_agent-host/compact",
        "_agent-host/fork",
        "_agent-host/delete",
    } == set(advertised)
    assert set(unknown.values()) == {-32602}, unknown
    assert missing.value.code == -32601


async def test_compact_and_fork_by_extension_method(spawn, workspace):
    async with spawn(STEPS, "--approval", "auto") as (conn, _):
        sid = await two_turns(conn, workspace)
        listed = await conn.ext_method("agent-host/checkpoints", {"sessionId": sid})
        second = listed["checkpoints"][1]["seq"]
        forked = await conn.ext_method(
            "agent-host/fork", {"sessionId": sid, "seq": second, "title": "from v1"}
        )
        in_fork = await conn.ext_method(
            "agent-host/checkpoints", {"sessionId": forked["sessionId"]}
        )
        compacted = await conn.ext_method(
            "agent-host/compact", {"sessionId": sid, "instructions": "keep the file names"}
        )
        sessions = await conn.list_sessions(cwd=str(workspace))

    assert forked["sessionId"] != sid
    assert [c["prompt"] for c in in_fork["checkpoints"]] == ["write v1"]
    titles = {s.session_id: s.title for s in sessions.sessions}
    assert titles[forked["sessionId"]] == "from v1"
    assert set(compacted) == {"before", "after", "compacted"}
    assert compacted["after"] <= compacted["before"]


def test_a_slash_command_is_parsed_only_by_its_row_s_name():
    from agent_host.acp.commands import COMMANDS, SLASH_COMMANDS, parse

    assert [c.name for c in COMMANDS] == [c.name for c in SLASH_COMMANDS]
    assert parse("  /rewind  -2 ") == ("rewind", "-2")
    assert parse("/compact keep\nthe names") == ("compact", "keep\nthe names")
    assert parse("/fork") == ("fork", "")
    assert parse("/forks") is None and parse("/etc/hosts is odd") is None
    assert parse("please /fork") is None
