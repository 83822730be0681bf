"""The resume snapshot (session.resume_snapshot) never changes what a resumed
session contains: whatever state it is in -- good, stale, damaged, torn by a crash,
behind the log, or overtaken by a restore -- a resume gives exactly what folding
the whole log gives."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agent_host.session import events as ev
from agent_host.session.conversation import limit_messages, to_messages
from agent_host.session.host import AgentHost
from agent_host.session.pricing import total_cost
from agent_host.session.resume_snapshot import session_model
from agent_host.session.store import open_store
from agent_host.session.timeline import timeline

from ..conftest import make_backend

SID = "20250101-000000-snapshot"
BIG = "line of a file the agent wrote\n" * 100


def script(tmp_path: Path) -> str:
    usage = {"input_tokens": 100, "output_tokens": 20}
    steps = []
    for n in range(12):
        steps.append(
            {
                "text": f"step {n}: writing",
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": f"f{n}.txt", "content": BIG}},
                    {"name": "read_file", "arguments": {"path": f"f{n}.txt"}},
                ],
                "usage": usage,
            }
        )
        steps.append({"text": f"step {n}: done", "usage": usage})
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


@pytest.fixture(params=["file", "sqlite", "memory", "postgres"])
def store_url(request, tmp_path):
    """Where the session lives; a memory store is shared by the hosts of one test."""
    if request.param == "file":
        return str(tmp_path / "store")
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'sessions.db'}"
    if request.param == "postgres":
        return make_backend("postgres", tmp_path, request).url
    return open_store("memory:")


def host_on(store, model: str, root: Path) -> AgentHost:
    return AgentHost(store=store, model=model, workdir=root, auto_compact=None, prices={})


async def build(store, model: str, root: Path, turns: int = 3, compact: bool = True) -> None:
    async with host_on(store, model, root) as host:
        await host.resume(SID)
        for n in range(turns):
            await host.send(f"prompt {n}")
            if compact and n == 1:
                await host.compact()


async def reference(store) -> dict:
    """What folding the whole log gives, read through a store object of its own."""
    owned = isinstance(store, str)
    s = open_store(store) if owned else store
    try:
        events = await s.read(SID)
    finally:
        if owned:
            await s.close()
    visible = timeline(events)
    return {
        "messages": to_messages(visible),
        "head": events[-1].seq if events else 0,
        "turns": sum(1 for e in visible if type(e) is ev.UserPrompt),
        "cost": total_cost(events),
        "model": session_model(visible),
    }


async def resumed(store, model: str, root: Path) -> tuple[dict, bool]:
    """What a fresh host resuming the session sees, and whether it folded the log:
    it holds the whole log, or it wrote a new snapshot (a resume that folds the log
    writes one, then holds only it)."""
    before = await _snapshot_or_none(store)
    async with host_on(store, model, root) as host:
        state = await host.resume(SID)
        folded = state.loaded or await _snapshot_or_none(store) != before
        seen = {
            "head": state.head,
            "turns": state.turns,
            "cost": await host.session_cost(SID),
            "model": state.model,
            "messages": await host.history(SID),
        }
        return seen, folded


async def _snapshot_or_none(store) -> tuple[bytes, int] | None:
    owned = isinstance(store, str)
    s = open_store(store) if owned else store
    try:
        read = getattr(s, "read_snapshot", None)
        found = None if read is None else await read(SID)
        return None if found is None else (found[0], found[1][0].seq if found[1] else 0)
    finally:
        if owned:
            await s.close()


async def snapshot_bytes(store) -> tuple[bytes, int]:
    owned = isinstance(store, str)
    s = open_store(store) if owned else store
    try:
        found = await s.read_snapshot(SID)
        assert found is not None, "no snapshot was written"
        data, events = found
        return data, events[0].seq
    finally:
        if owned:
            await s.close()


async def put_snapshot(store, head: int, data: bytes) -> None:
    owned = isinstance(store, str)
    s = open_store(store) if owned else store
    try:
        await s.write_snapshot(SID, head, data)
    finally:
        if owned:
            await s.close()


async def test_a_resume_reads_the_snapshot_and_sees_what_the_log_says(store_url, tmp_path, root):
    model = script(tmp_path)
    await build(store_url, model, root)
    seen, folded = await resumed(store_url, model, root)
    assert not folded, "the resume folded the whole log instead of reading its snapshot"
    expected = await reference(store_url)
    assert seen == expected
    assert expected["turns"] == 3 and any(
        m["content"].startswith("Summary of the conversation") for m in expected["messages"][:1]
    )


async def test_a_turn_on_a_resumed_session_logs_and_snapshots_as_a_loaded_one(
    store_url, tmp_path, root
):
    model = script(tmp_path)
    await build(store_url, model, root, turns=2)
    async with host_on(store_url, model, root) as host:
        state = await host.resume(SID)
        result = await host.send("one more")
        assert result.stop_reason == "end_turn"
        assert not state.loaded
        # Compaction reads the whole log; the state is loaded after it.
        await host.compact(session_id=SID)
        assert state.loaded
        await host.send("and another")
    seen, folded = await resumed(store_url, model, root)
    assert not folded
    assert seen == await reference(store_url)
    assert seen["turns"] == 4


async def test_events_after_the_snapshot_are_folded_on_top(store_url, tmp_path, root):
    model = script(tmp_path)
    await build(store_url, model, root)
    s = open_store(store_url) if isinstance(store_url, str) else store_url
    # Another writer's events with no turn end: the snapshot stays behind them.
    await s.append(SID, [ev.UserPrompt(text="from elsewhere", model="openai/gpt-4.1")])
    await s.append(SID, [ev.ToolCall(call_id="c1", name="read_file", arguments={"path": "x"})])
    if isinstance(store_url, str):
        await s.close()
    seen, folded = await resumed(store_url, model, root)
    assert not folded
    expected = await reference(store_url)
    assert seen == expected
    assert expected["model"] == "openai/gpt-4.1"
    assert expected["messages"][-1]["role"] == "tool"  # the open call, answered as interrupted


async def test_a_restore_after_the_snapshot_makes_the_resume_fold_the_log(
    store_url, tmp_path, root
):
    model = script(tmp_path)
    await build(store_url, model, root, compact=False)
    async with host_on(store_url, model, root) as host:
        points = await host.list_checkpoints(SID)
        await host.restore(SID, points[1].seq)
    seen, folded = await resumed(store_url, model, root)
    assert folded, "a restore after the snapshot hides what it folded"
    assert seen == await reference(store_url)
    assert seen["turns"] == 1
    # That resume wrote a snapshot of the restored log, and the next reads it.
    seen, folded = await resumed(store_url, model, root)
    assert not folded
    assert seen == await reference(store_url)
    async with host_on(store_url, model, root) as host:
        await host.resume(SID)
        await host.undo_restore(SID)
    seen, folded = await resumed(store_url, model, root)
    assert folded
    assert seen == await reference(store_url) and seen["turns"] == 3


async def test_a_log_cut_and_grown_again_to_the_same_seq_is_not_read_from_its_snapshot(
    store_url, tmp_path, root
):
    model = script(tmp_path)
    await build(store_url, model, root)
    async with host_on(store_url, model, root) as host:  # the snapshot whole at the head
        await host.resume(SID)
        await host.compact()
    s = open_store(store_url) if isinstance(store_url, str) else store_url
    head = await s.head(SID)
    await s.truncate(SID, head - 3)
    await s.append(SID, [ev.UserPrompt(text="another past"), ev.AssistantMessage(text="x")])
    await s.append(SID, [ev.TurnEnd(stop_reason="end_turn")])
    assert await s.head(SID) == head
    if isinstance(store_url, str):
        await s.close()
    seen, folded = await resumed(store_url, model, root)
    assert folded
    assert seen == await reference(store_url)
    assert seen["messages"][-2:] == [
        {"role": "user", "content": "another past"},
        {"role": "assistant", "content": "x"},
    ]


async def test_a_log_cut_behind_its_snapshot_is_folded(store_url, tmp_path, root):
    model = script(tmp_path)
    await build(store_url, model, root)
    async with host_on(store_url, model, root) as host:  # the snapshot whole at the head
        await host.resume(SID)
        await host.compact()
    s = open_store(store_url) if isinstance(store_url, str) else store_url
    await s.truncate(SID, await s.head(SID) - 5)
    if isinstance(store_url, str):
        await s.close()
    seen, folded = await resumed(store_url, model, root)
    assert folded
    assert seen == await reference(store_url)


def _damaged(data: bytes) -> dict[str, bytes]:
    newline = data.index(b"\n")
    header_end = newline + int(data[:newline].split(b" ")[2]) + 1
    flip = lambda at: data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]  # noqa: E731
    return {
        "empty": b"",
        "garbage": b"not a snapshot at all",
        "first line": b"AHS1 zzzz" + data[9:],
        "header byte": flip(newline + 5),
        "body byte": flip(header_end + 10),
        "last byte": flip(len(data) - 1),
        "cut short": data[: len(data) - 7],
        "longer": data + b" ",
        "version 2": data.replace(b"AHS1 ", b"AHS2 ", 1),
        "header swapped": data[:header_end] + data[header_end:].replace(b"prompt 0", b"prompt 9"),
    }


@pytest.mark.parametrize("damage", list(_damaged(b"AHS1 00000000 4\n{}{}xxxxxxxxxxxx")))
async def test_a_damaged_snapshot_is_rebuilt_with_a_warning(
    damage, store_url, tmp_path, root, caplog
):
    model = script(tmp_path)
    await build(store_url, model, root)
    data, head = await snapshot_bytes(store_url)
    await put_snapshot(store_url, head, _damaged(data)[damage])
    with caplog.at_level(logging.WARNING, "agent_host.session.resume_snapshot"):
        seen, _ = await resumed(store_url, model, root)
    assert seen == await reference(store_url)
    assert "resume snapshot is not used" in caplog.text
    # The next resume has a good snapshot again.
    seen, folded = await resumed(store_url, model, root)
    assert not folded
    assert seen == await reference(store_url)


async def test_every_torn_write_of_a_file_snapshot_resumes_as_the_log_says(tmp_path, root):
    """A crash while the file store writes a snapshot (not synced, renamed over the
    last one) can leave, after a power cut, any prefix of it, zeros, the old one, or
    a stray temporary file: each resumes as the whole log does."""
    store = str(tmp_path / "store")
    model = script(tmp_path)
    await build(store, model, root, turns=2)
    old, old_head = await snapshot_bytes(store)
    async with host_on(store, model, root) as host:
        await host.resume(SID)
        await host.send("prompt 2")
        await host.compact()  # written whole (a turn end appends a segment)
    new, head = await snapshot_bytes(store)
    assert head > old_head
    path = tmp_path / "store" / "snapshots" / f"{SID}.snap"
    expected = await reference(store)
    cuts = sorted({*range(0, len(new) + 1, max(1, len(new) // 40)), 1, 6, len(new) - 1})
    states = [(head, new[:n]) for n in cuts]
    states += [(head, b"\0" * len(new)), (old_head, old)]
    (path.parent / f"{SID}.snap.123-456.tmp").write_bytes(new[: len(new) // 2])
    for at, data in states:
        path.write_bytes(b"%d\n" % at + data)
        seen, _ = await resumed(store, model, root)
        assert seen == expected, (at, len(data))
    # The head line itself torn, or naming a seq the log never reached.
    for first in (b"", b"1", b"99999999\n"):
        path.write_bytes(first + new[:10])
        seen, _ = await resumed(store, model, root)
        assert seen == expected


async def test_a_history_page_does_not_keep_the_conversation(tmp_path, root):
    store = str(tmp_path / "store")
    model = script(tmp_path)
    await build(store, model, root)
    async with host_on(store, model, root) as host:
        state = await host.resume(SID)
        page = await host.history(SID, limit=2)
        assert page == limit_messages((await reference(store))["messages"], 2)
        assert state._fold is None  # read for the page, not held
        assert not state.loaded
        # What looks further back than the snapshot reads the log.
        assert [c.seq for c in await host.list_checkpoints(SID)]
        assert state.loaded


async def test_a_store_without_snapshots_resumes_by_folding(tmp_path, root):
    """A Checkpointer of another make (no snapshot methods) still resumes."""
    inner = open_store("memory:")

    class Plain:
        blobs = inner.blobs
        url = "memory:"

        def __getattr__(self, name):
            if name in ("read_snapshot", "write_snapshot"):
                raise AttributeError(name)
            return getattr(inner, name)

    model = script(tmp_path)
    await build(Plain(), model, root)
    seen, folded = await resumed(Plain(), model, root)
    assert folded
    assert seen == await reference(inner)


async def test_a_header_longer_than_a_resume_reads_is_read_whole(
    store_url, tmp_path, root, monkeypatch
):
    from agent_host.session import resume_snapshot

    model = script(tmp_path)
    await build(store_url, model, root)
    monkeypatch.setattr(resume_snapshot, "HEADER_READ", 40)
    seen, folded = await resumed(store_url, model, root)
    assert not folded
    assert seen == await reference(store_url)


@pytest.mark.parametrize("open_call", [False, True])
async def test_every_history_page_is_the_end_of_the_whole_conversation(
    open_call, store_url, tmp_path, root
):
    from agent_host.session.state import SessionState

    model = script(tmp_path)
    await build(store_url, model, root, turns=4)
    s = open_store(store_url) if isinstance(store_url, str) else store_url
    if open_call:
        # A turn end with a call still unanswered: the snapshot holds an open call,
        # and the events after it answer it.
        state = SessionState(s, SID)
        await state.refresh(full=False)
        await state.append(
            [
                ev.ToolCall(call_id="open", name="read_file", arguments={"path": "a"}),
                ev.TurnEnd(stop_reason="cancelled"),
            ]
        )
        await s.append(SID, [ev.AssistantMessage(text="later"), ev.UserPrompt(text="more")])
        await s.append(SID, [ev.ToolResult(call_id="open", output="late result")])
    if isinstance(store_url, str):
        await s.close()
    whole = (await reference(store_url))["messages"]
    for limit in (None, 0, 1, 2, 3, 4, 5, 7, 10, 20, len(whole) - 1, len(whole), 500):
        async with host_on(store_url, model, root) as host:
            state = await host.resume(SID)
            assert await host.history(SID, limit=limit) == limit_messages(whole, limit), limit
            assert not state.loaded


async def test_a_first_resume_without_a_snapshot_writes_it_then_holds_only_it(
    store_url, tmp_path, root
):
    """Issue 27: the log folded once to write the snapshot is not kept; what the state
    holds after is what a resume from the snapshot holds."""
    model = script(tmp_path)
    await build(store_url, model, root)
    data, head = await snapshot_bytes(store_url)
    await put_snapshot(store_url, head, b"")  # as good as none: damaged, folded again
    async with host_on(store_url, model, root) as host:
        state = await host.resume(SID)
        assert not state.loaded and state.latest == []
        # Written whole at the log's head (past the turn ends' segments).
        assert head < (await snapshot_bytes(store_url))[1] == (await reference(store_url))["head"]
        assert await host.history(SID) == (await reference(store_url))["messages"]
        assert (await host.send("and on")).stop_reason == "end_turn"
    seen, folded = await resumed(store_url, model, root)
    assert not folded and seen == await reference(store_url)


@pytest.mark.parametrize("limit", [None, 2])
async def test_a_history_read_while_another_call_loads_the_log_pages_the_log(
    tmp_path, root, monkeypatch, limit
):
    """A page read from the snapshot while another call on the session (a fork, the
    checkpoints) reads the whole log finds the log held when its read returns: it
    pages that, rather than failing on the snapshot it no longer holds."""
    from agent_host.session import resume_snapshot

    store = str(tmp_path / "store")
    model = script(tmp_path)
    await build(store, model, root)
    async with host_on(store, model, root) as host:
        state = await host.resume(SID)
        assert not state.loaded
        real_load = resume_snapshot.load

        async def the_log_loaded_meanwhile(*args, **kwargs):
            got = await real_load(*args, **kwargs)
            if kwargs.get("body"):
                await state.load()  # as a fork's refresh does between the two
            return got

        monkeypatch.setattr(resume_snapshot, "load", the_log_loaded_meanwhile)
        page = await host.history(SID, limit=limit)
        assert state.loaded
        assert page == limit_messages((await reference(store))["messages"], limit)
