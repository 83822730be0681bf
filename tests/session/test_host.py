"""The engine end to end through its Python API, with the scripted model."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from agent_host.session import events as ev
from agent_host.session.conversation import INTERRUPTED
from agent_host.session.errors import (
    CapabilityUnsupported,
    CheckpointNotFound,
    ModelError,
    TurnInProgress,
    WorkspaceMismatch,
)
from agent_host.session.host import AgentHost
from agent_host.session.providers import open_provider


def script(tmp_path, steps, name="script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


THREE_TURNS = [
    {"tool_calls": [call("write_file", path="a.py", content="v1\n")]},
    {"text": "Created a.py."},
    {
        "tool_calls": [
            call("edit_file", path="a.py", old_string="v1", new_string="v2"),
            call("write_file", path="b.py", content="b\n"),
        ]
    },
    {"text": "Edited a.py and added b.py."},
    {"tool_calls": [call("delete_file", path="a.py")]},
    {"text": "Deleted a.py."},
]


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("untouched\n")
    return root


def files(root) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
async def host(tmp_path, ws):
    h = AgentHost(
        store=tmp_path / "store", model=script(tmp_path, THREE_TURNS), workdir=ws, auto_compact=None
    )
    yield h
    await h.close()


async def run_three_turns(host):
    results = [
        await host.send("create a.py"),
        await host.send("edit a.py, add b.py"),
        await host.send("delete a.py"),
    ]
    assert [r.stop_reason for r in results] == ["end_turn"] * 3
    return results


async def test_three_turns_create_edit_delete(host, ws):
    results = await run_three_turns(host)
    assert files(ws) == {"b.py": "b\n", "keep.txt": "untouched\n"}
    assert results[1].text == "Edited a.py and added b.py."
    checkpoints = await host.list_checkpoints()
    assert [c.seq for c in checkpoints] == [r.checkpoint for r in results]
    assert [c.prompt for c in checkpoints] == ["create a.py", "edit a.py, add b.py", "delete a.py"]
    assert [c.files for c in checkpoints] == [["a.py"], ["a.py", "b.py"], ["a.py"]]


@pytest.mark.parametrize(
    "turn, want_files, want_prompts",
    [
        (2, {"a.py": "v2\n", "b.py": "b\n"}, ["create a.py", "edit a.py, add b.py"]),
        (1, {"a.py": "v1\n"}, ["create a.py"]),
        (0, {}, []),
    ],
)
async def test_restore_to_each_checkpoint_and_undo(host, ws, turn, want_files, want_prompts):
    results = await run_three_turns(host)
    after_all = files(ws)
    history_after_all = await host.history()

    restored = await host.restore(host.session_id, results[turn].checkpoint)

    assert files(ws) == {**want_files, "keep.txt": "untouched\n"}
    history = await host.history()
    assert [m["content"] for m in history if m["role"] == "user"] == want_prompts
    assert sorted(restored.restored_files) == sorted(
        set(after_all) ^ set(files(ws))
        | {p for p in want_files if after_all.get(p) != want_files[p]}
    )
    assert await host.history() == history_after_all[: len(history)]

    undone = await host.undo_restore()
    assert files(ws) == after_all
    assert await host.history() == history_after_all
    assert undone.restored_events == restored.removed_events


async def test_restore_files_only_and_conversation_only(host, ws):
    results = await run_three_turns(host)
    history = await host.history()
    await host.restore(host.session_id, results[1].checkpoint, conversation=False)
    assert files(ws) == {"a.py": "v1\n", "keep.txt": "untouched\n"}
    assert await host.history() == history
    await host.undo_restore()
    await host.restore(host.session_id, results[1].checkpoint, files=False)
    assert files(ws) == {"b.py": "b\n", "keep.txt": "untouched\n"}
    assert len(await host.history()) < len(history)


async def test_a_restore_replays_the_same_script_step(host, ws):
    results = await run_three_turns(host)
    await host.restore(host.session_id, results[1].checkpoint)
    again = await host.send("edit a.py, add b.py")
    assert again.text == "Edited a.py and added b.py."
    assert files(ws) == {"a.py": "v2\n", "b.py": "b\n", "keep.txt": "untouched\n"}


async def test_a_session_from_another_folder_restores_its_conversation_not_its_files(
    host, ws, tmp_path
):
    """Its snapshots name files of the folder it was started in, not of this one."""
    results = await run_three_turns(host)
    other = tmp_path / "other-project"
    other.mkdir()
    (other / "a.py").write_text("another project's a.py\n")
    elsewhere = AgentHost(store=tmp_path / "store", model=host.model, workdir=other)
    try:
        head = await elsewhere.store.head(host.session_id)
        with pytest.raises(WorkspaceMismatch, match="was started in .*files: false"):
            await elsewhere.restore(host.session_id, results[1].checkpoint)
        assert files(other) == {"a.py": "another project's a.py\n"}
        assert await elsewhere.store.head(host.session_id) == head  # nothing logged
        done = await elsewhere.restore(host.session_id, results[1].checkpoint, files=False)
        assert done.restored_files == [] and done.removed_events > 0
        await elsewhere.undo_restore(host.session_id)  # a conversation-only undo: allowed
        await host.restore(host.session_id, results[1].checkpoint, conversation=False)
        with pytest.raises(WorkspaceMismatch):
            await elsewhere.undo_restore(host.session_id)  # its undo writes files
        assert files(other) == {"a.py": "another project's a.py\n"}
    finally:
        await elsewhere.close()


async def test_restore_refuses_a_seq_that_is_not_a_prompt(host):
    await host.send("create a.py")
    with pytest.raises(CheckpointNotFound, match="checkpoints are at seqs"):
        await host.restore(host.session_id, 3)


async def test_sessions_survive_a_restart(tmp_path, ws):
    model = script(tmp_path, THREE_TURNS)
    first = AgentHost(store=tmp_path / "store", model=model, workdir=ws)
    await first.send("create a.py")
    sid, cost = first.session_id, first.cost
    await first.close()

    second = AgentHost(store=tmp_path / "store", model=model, workdir=ws)
    assert [s.id for s in await second.list_sessions()] == [sid]
    await second.resume(sid)
    assert second.cost == cost
    result = await second.send("edit a.py, add b.py")
    assert result.text == "Edited a.py and added b.py."
    assert len(await second.list_checkpoints()) == 2
    await second.close()


async def test_exhausted_script_is_a_model_error_and_the_log_stays_whole(tmp_path, ws):
    host = AgentHost(store="memory:", model=script(tmp_path, [{"text": "only one"}]), workdir=ws)
    await host.send("one")
    with pytest.raises(ModelError, match="exhausted"):
        await host.send("two")
    events = await host.store.read(host.session_id)
    assert isinstance(events[-1], ev.TurnEnd) and events[-1].stop_reason == "error"
    await host.close()


async def test_cancel_mid_stream_keeps_partial_text(tmp_path, ws):
    slow = {"text": "one two three four five six seven eight nine ten", "delay_ms": 100}
    host = AgentHost(store="memory:", model=script(tmp_path, [slow]), workdir=ws)
    task = asyncio.create_task(host.send("talk slowly"))
    await asyncio.sleep(0.35)
    assert await host.cancel()
    result = await task
    assert result.stop_reason == "cancelled"
    assert result.text and "ten" not in result.text
    events = await host.store.read(host.session_id)
    assert [type(e) for e in events[-2:]] == [ev.AssistantMessage, ev.TurnEnd]
    assert events[-1].stop_reason == "cancelled"
    await host.close()


async def test_cancel_during_a_tool_answers_every_call(tmp_path, ws):
    steps = [
        {
            "tool_calls": [
                call("run_command", command="sleep 30"),
                call("write_file", path="never.py", content="x"),
            ]
        }
    ]
    host = AgentHost(store="memory:", model=script(tmp_path, steps), workdir=ws)
    task = asyncio.create_task(host.send("run it"))
    await asyncio.sleep(0.5)
    await host.cancel()
    assert (await task).stop_reason == "cancelled"
    messages = await host.history()
    calls = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert set(calls) == set(results)
    assert not (ws / "never.py").exists()
    assert INTERRUPTED not in results.values()  # answered in the log, not patched up
    await host.close()


async def test_one_turn_at_a_time_per_session(tmp_path, ws):
    slow = {"text": "a b c d e f", "delay_ms": 50}
    host = AgentHost(store="memory:", model=script(tmp_path, [slow, slow]), workdir=ws)
    first = asyncio.create_task(host.send("first"))
    await asyncio.sleep(0.05)
    with pytest.raises(TurnInProgress):
        await host.send("second")
    assert (await first).stop_reason == "end_turn"
    await host.close()


async def test_without_sessions_persistent_calls_are_unsupported(tmp_path, ws):
    host = AgentHost(sessions=False, model=script(tmp_path, [{"text": "hi"}]), workdir=ws)
    assert (await host.send("hello")).text == "hi"
    with pytest.raises(CapabilityUnsupported, match="sessions=False"):
        await host.list_sessions()
    with pytest.raises(CapabilityUnsupported):
        await host.resume("other")
    await host.close()


async def test_permission_rejected_leaves_files_alone(tmp_path, ws):
    asked = []

    async def reject(request):
        asked.append(request)
        return "reject_once"

    steps = [
        {"tool_calls": [call("write_file", path="keep.txt", content="changed\n")]},
        {"text": "ok"},
    ]
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, steps),
        workdir=ws,
        approval="ask",
        permission=reject,
    )
    await host.send("change keep.txt")
    assert (ws / "keep.txt").read_text() == "untouched\n"
    (request,) = asked
    assert request.tool == "write_file" and "+changed" in request.diff
    results = [m for m in await host.history() if m["role"] == "tool"]
    assert results[0]["content"].startswith("Permission denied")
    await host.close()


async def test_a_permission_prompt_whose_file_cannot_be_read_is_asked_without_a_diff(
    tmp_path, ws, caplog
):
    caplog.set_level(logging.INFO, logger="agent_host.session.proposal")
    (ws / "sub").mkdir()
    asked = []

    async def reject(request):
        asked.append(request)
        return "reject_once"

    steps = [{"tool_calls": [call("write_file", path="sub", content="x\n")]}, {"text": "ok"}]
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, steps),
        workdir=ws,
        approval="ask",
        permission=reject,
    )
    await host.send("overwrite a folder")
    (request,) = asked
    assert request.tool == "write_file" and request.diff is None
    # Why there is no diff is logged, with the workspace's reason.
    [why] = [r.getMessage() for r in caplog.records if "no diff" in r.getMessage()]
    assert "write_file of 'sub'" in why and "directory" in why
    await host.close()


async def test_allow_always_is_remembered_for_the_session(tmp_path, ws):
    asked = []

    async def allow_always(request):
        asked.append(request.tool)
        return "allow_always"

    steps = [
        {"tool_calls": [call("write_file", path="x.py", content="1")]},
        {"tool_calls": [call("write_file", path="y.py", content="2")]},
        {"text": "done"},
    ]
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, steps),
        workdir=ws,
        approval="ask",
        permission=allow_always,
    )
    await host.send("write two files")
    assert asked == ["write_file"]
    assert (ws / "x.py").read_text() == "1" and (ws / "y.py").read_text() == "2"
    await host.close()


async def test_read_only_refuses_edits_without_asking(tmp_path, ws):
    steps = [{"tool_calls": [call("delete_file", path="keep.txt")]}, {"text": "ok"}]
    host = AgentHost(
        store="memory:", model=script(tmp_path, steps), workdir=ws, approval="read-only"
    )
    await host.send("delete it")
    assert (ws / "keep.txt").exists()
    await host.close()


async def test_compaction_summarises_older_turns(host):
    await run_three_turns(host)
    before = await host.history()
    result = await host.compact()
    assert result.compacted and result.after < result.before
    after = await host.history()
    assert after[0]["role"] == "user" and after[0]["content"].startswith("Summary")
    assert after[1:] == before[-len(after) + 1 :]
    assert after[1] == {"role": "user", "content": "delete a.py"}


async def test_compaction_failure_leaves_the_session_untouched(tmp_path, ws, host):
    await run_three_turns(host)
    head = await host.store.head(host.session_id)
    unreachable = open_provider(
        "openai/gpt-4.1-mini",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-test",
        max_retries=0,
        timeout=2,
    )
    failing = AgentHost(store=host.store, provider=unreachable, workdir=ws)
    await failing.resume(host.session_id)
    with pytest.raises(ModelError):
        await failing.compact()
    assert await host.store.head(host.session_id) == head
    await failing.close()
