"""A turn's changes and a checkpoint range's, as per-file diffs read from what the
session recorded: the agent's edits and its commands' changes alike, with added,
deleted, renamed and binary files marked."""

from __future__ import annotations

import pytest

from agent_host.session import events as ev
from agent_host.session.changes import WHOLE_TEXT_BYTES, moves, source_of
from agent_host.session.errors import CheckpointNotFound, InvalidArgument
from agent_host.session.host import AgentHost

from ..conftest import make_backend
from .test_host import call, script


def command(text: str) -> dict:
    return {"tool_calls": [call("run_command", command=text)]}


STEPS = [
    {
        "tool_calls": [
            call("edit_file", path="mod.txt", old_string="two", new_string="TWO"),
            call("write_file", path="new.txt", content="fresh\n"),
            call("delete_file", path="gone.txt"),
        ]
    },
    {"text": "edited"},
    command("mv old.txt moved.txt && printf 'x\\0y' > blob.bin && sed -i 's/one/ONE/' mod.txt"),
    {"text": "moved"},
]


@pytest.fixture
async def host(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mod.txt").write_text("one\ntwo\nthree\n")
    (ws / "gone.txt").write_text("bye\n")
    (ws / "old.txt").write_text("moving\n")
    (ws / "blob.bin").write_bytes(b"\x00\x01")
    store = make_backend("sqlite", tmp_path).open()
    h = AgentHost(store=store, model=script(tmp_path, STEPS), workdir=ws, auto_compact=None)
    yield h
    await h.close()


def by_path(found):
    return {d.path: d for d in found}


async def test_a_turns_edits_are_diffs_marked_added_modified_deleted(host):
    first = await host.send("edit")
    await host.send("shell")
    found = by_path(await host.handle().changes(first.checkpoint))
    assert set(found) == {"mod.txt", "new.txt", "gone.txt"}
    mod = found["mod.txt"]
    assert (mod.action, mod.source, mod.binary) == ("modified", "edit", False)
    assert mod.before == "one\ntwo\nthree\n" and mod.after == "one\nTWO\nthree\n"
    assert mod.diff.startswith("--- a/mod.txt\n+++ b/mod.txt\n@@ -1,3 +1,3 @@\n")
    assert " one\n-two\n+TWO\n three\n" in mod.diff
    assert (mod.added, mod.removed) == (1, 1)
    new = found["new.txt"]
    assert (new.action, new.before, new.after, new.added, new.removed) == (
        "added",
        None,
        "fresh\n",
        1,
        0,
    )
    assert new.diff.startswith("--- /dev/null\n+++ b/new.txt\n")
    gone = found["gone.txt"]
    assert (gone.action, gone.before, gone.after, gone.removed) == ("deleted", "bye\n", None, 1)


async def test_a_commands_changes_are_marked_renamed_binary_and_by_command(host):
    await host.send("edit")
    second = await host.send("shell")
    found = by_path(await host.handle().changes())  # no seq: the last turn
    assert found == by_path(await host.handle().changes(second.checkpoint))
    assert set(found) == {"moved.txt", "blob.bin", "mod.txt"}
    moved = found["moved.txt"]
    assert (moved.action, moved.old_path, moved.source, moved.diff) == (
        "renamed",
        "old.txt",
        "command",
        "",
    )
    assert moved.before == moved.after == "moving\n"
    blob = found["blob.bin"]
    assert (blob.action, blob.binary, blob.diff, blob.before, blob.after) == (
        "modified",
        True,
        "",
        None,
        None,
    )
    assert found["mod.txt"].diff.count("\n-") == 1 and "+ONE\n" in found["mod.txt"].diff


async def test_a_range_is_the_net_change_over_its_turns(host):
    first = await host.send("edit")
    second = await host.send("shell")
    whole = by_path(await host.handle().changes(from_seq=first.checkpoint))
    assert whole["mod.txt"].before == "one\ntwo\nthree\n"
    assert whole["mod.txt"].after == "ONE\nTWO\nthree\n"
    assert whole["mod.txt"].source == "mixed"
    assert (whole["mod.txt"].added, whole["mod.txt"].removed) == (2, 2)
    assert set(whole) == {"mod.txt", "new.txt", "gone.txt", "moved.txt", "blob.bin"}
    upto = await host.handle().changes(from_seq=first.checkpoint, to_seq=second.checkpoint)
    assert upto == await host.handle().changes(first.checkpoint)


async def test_a_range_or_turn_that_is_not_a_checkpoint_is_named(host):
    first = await host.send("edit")
    with pytest.raises(CheckpointNotFound, match="no prompt at seq 999"):
        await host.handle().changes(999)
    with pytest.raises(InvalidArgument, match="seq"):
        await host.handle().changes(first.checkpoint, from_seq=first.checkpoint)
    with pytest.raises(InvalidArgument, match="fromSeq"):
        await host.handle().changes(to_seq=first.checkpoint)


async def test_a_session_without_prompts_changed_nothing(host):
    assert await host.handle("empty").changes() == []


async def test_a_large_text_is_diffed_but_not_given_whole(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    big = "line\n" * (WHOLE_TEXT_BYTES // 5 + 10)
    steps = [
        {"tool_calls": [call("write_file", path="big.txt", content=big + "end\n")]},
        {"text": "ok"},
    ]
    (ws / "big.txt").write_text(big)
    store = make_backend("sqlite", tmp_path).open()
    host = AgentHost(store=store, model=script(tmp_path, steps), workdir=ws, auto_compact=None)
    try:
        await host.send("grow")
        (change,) = await host.handle().changes()
        assert change.before is None and change.after is None and not change.binary
        assert change.diff.endswith("+end\n") and (change.added, change.removed) == (1, 0)
    finally:
        await host.close()


def test_an_mcp_tools_captured_change_is_marked_mcp():
    events = [
        ev.UserPrompt(seq=1, text="go"),
        ev.ToolCall(seq=2, call_id="c", name="mcp__fs__write"),
        ev.FileSnapshot(seq=3, path="a", before=None, after="b" * 64, by_command=True),
        ev.ToolCall(seq=4, call_id="d", name="run_command"),
        ev.FileSnapshot(seq=5, path="c", before=None, after="b" * 64, by_command=True),
        ev.ToolCall(seq=6, call_id="e", name="write_file"),
        ev.FileSnapshot(seq=7, path="c", before="b" * 64, after=None),
    ]
    found = {m.path: source_of(m.sources) for m in moves(events)}
    assert found == {"a": "mcp", "c": "mixed"}


def test_a_file_without_final_newline_says_so():
    from agent_host.session.changes import unified_diff

    diff, added, removed = unified_diff("a\nb", "a\nc", "f", "f")
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
    assert (added, removed) == (1, 1)
