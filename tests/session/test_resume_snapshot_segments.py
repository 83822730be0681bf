# ruff: noqa: F811 - the fixtures imported are the parameters of the tests
"""A turn end appends a segment of the resume snapshot, not the whole of it
(session.resume_snapshot): the snapshot is written whole only at a compaction,
on a first resume without one, or when its segments pile up. Whatever the
segments -- many, after a resume, cut by a crash at any durable step of a turn --
a resume gives exactly what folding the whole log gives."""

from __future__ import annotations

import shutil

import pytest

from agent_host.session import resume_snapshot
from agent_host.session.conversation import limit_messages

from .test_restore_crash import Crasher, fast_tmp  # noqa: F401, F811 - fixture
from .test_resume_snapshot import (
    SID,
    build,
    host_on,
    reference,
    resumed,
    script,
    snapshot_bytes,
    store_url,  # noqa: F401, F811 - fixture
)

SEGMENT = b"AHG1 "


async def test_a_turn_end_appends_a_segment_and_keeps_the_snapshot(store_url, tmp_path, root):
    model = script(tmp_path)
    await build(store_url, model, root, turns=2, compact=False)
    before, head = await snapshot_bytes(store_url)
    async with host_on(store_url, model, root) as host:
        await host.resume(SID)
        await host.send("prompt 2")
    after, same_head = await snapshot_bytes(store_url)
    assert same_head == head, "the snapshot was written whole at a turn end"
    assert after.startswith(before) and SEGMENT in after[len(before) :]
    seen, folded = await resumed(store_url, model, root)
    assert not folded
    assert seen == await reference(store_url)


async def test_a_compaction_writes_the_snapshot_whole(store_url, tmp_path, root):
    model = script(tmp_path)
    await build(store_url, model, root, turns=2, compact=False)
    async with host_on(store_url, model, root) as host:
        await host.resume(SID)
        await host.compact()
    data, head = await snapshot_bytes(store_url)
    assert SEGMENT not in data
    seen, folded = await resumed(store_url, model, root)
    assert not folded and seen["head"] == head
    assert seen == await reference(store_url)


async def test_piled_up_segments_are_folded_into_the_snapshot(
    store_url, tmp_path, root, monkeypatch
):
    monkeypatch.setattr(resume_snapshot, "MAX_SEGMENTS", 2)
    model = script(tmp_path)
    counts = []
    async with host_on(store_url, model, root) as host:
        await host.resume(SID)
        for n in range(6):
            await host.send(f"prompt {n}")
            data, _ = await snapshot_bytes(store_url)
            counts.append(data.count(SEGMENT))
    assert counts == [0, 1, 2, 0, 1, 2], "segments were not folded once they piled up"
    seen, folded = await resumed(store_url, model, root)
    assert not folded
    assert seen == await reference(store_url)


async def test_resumes_between_turns_go_on_appending_segments(store_url, tmp_path, root):
    """Each turn in a new host: resumed from the header, the body read with its
    segments applied, the turn end appends the next one after them."""
    model = script(tmp_path)
    await build(store_url, model, root, turns=1, compact=False)
    for n in range(1, 4):
        async with host_on(store_url, model, root) as host:
            await host.resume(SID)
            await host.send(f"prompt {n}")
        data, _ = await snapshot_bytes(store_url)
        assert data.count(SEGMENT) == n
        seen, folded = await resumed(store_url, model, root)
        assert not folded, f"turn {n}: the resume folded the log"
        assert seen == await reference(store_url)


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_turn_killed_at_every_durable_step_resumes_as_the_log_says(
    backend, fast_tmp, root, tmp_path
):
    """A snapshot with a segment, then a turn SIGKILLed before each of its durable
    steps (the log's append, the segment's, between them): a resume gives what
    folding the log gives, and the next turn end writes a usable snapshot."""
    model = script(tmp_path)
    template = fast_tmp / "template"
    template.mkdir()
    url = (
        (template / "store").as_uri() if backend == "file" else f"sqlite://{template / 'store.db'}"
    )
    await build(url, model, root, turns=2, compact=False)
    crasher = Crasher()
    try:
        kill_at, seen_kills = 1, 0
        while True:
            run = fast_tmp / f"run{kill_at}"
            shutil.copytree(template, run)
            where = url.replace(str(template), str(run))
            job = {
                "op": "send",
                "store": where,
                "session": SID,
                "model": model,
                "workspace": str(root),
                "prompt": "prompt 2",
                "kill_at": kill_at,
                "report": str(run / "report.json"),
            }
            report = crasher.run(**job)
            assert "error" not in report, report
            local = where if backend == "sqlite" else str(run / "store")
            seen, _ = await resumed(local, model, root)
            assert seen == await reference(local), f"killed at step {kill_at}"
            async with host_on(local, model, root) as host:  # a turn on what was left
                await host.resume(SID)
                await host.send("prompt 3")
            seen, folded = await resumed(local, model, root)
            assert not folded, f"killed at step {kill_at}: no usable snapshot after a turn"
            assert seen == await reference(local)
            shutil.rmtree(run)
            if not report["killed"]:
                break
            seen_kills += 1
            kill_at += 1
        assert seen_kills >= 2
    finally:
        crasher.close()


async def test_a_file_snapshot_of_before_segments_is_read_then_written_anew(tmp_path, root):
    """A snapshot file whose first line holds only its seq (written before
    segments were): read as it is, and the next turn end writes it whole again,
    in the format segments follow."""
    store = str(tmp_path / "store")
    model = script(tmp_path)
    await build(store, model, root, turns=2, compact=False)
    async with host_on(store, model, root) as host:  # a snapshot with no segment
        await host.resume(SID)
        await host.compact()
    (path,) = (tmp_path / "store" / "snapshots").iterdir()
    first, rest = path.read_bytes().split(b"\n", 1)
    head, _ = first.split(b" ")
    path.write_bytes(head + b"\n" + rest)
    seen, folded = await resumed(store, model, root)
    assert not folded
    assert seen == await reference(store)
    async with host_on(store, model, root) as host:
        await host.resume(SID)
        await host.send("prompt 2")
    assert path.read_bytes().split(b"\n", 1)[0].count(b" ") == 1
    async with host_on(store, model, root) as host:
        await host.resume(SID)
        await host.send("prompt 3")
    data, _ = await snapshot_bytes(store)
    assert SEGMENT in data
    seen, folded = await resumed(store, model, root)
    assert not folded
    assert seen == await reference(store)


@pytest.mark.parametrize("limit", [1, 3, 7, 40])
async def test_a_history_page_after_segments_is_the_log_s_last_messages(
    store_url, tmp_path, root, limit
):
    """A page reads the snapshot's last messages and applies the segments after
    them (widened, or read whole, when a segment reaches before the page)."""
    model = script(tmp_path)
    await build(store_url, model, root, turns=4, compact=False)
    data, _ = await snapshot_bytes(store_url)
    assert data.count(SEGMENT) == 3
    async with host_on(store_url, model, root) as host:
        state = await host.resume(SID)
        page = await host.history(SID, limit)
        assert not state.loaded, "the page read the whole log"
    expected = limit_messages((await reference(store_url))["messages"], limit)
    assert page == expected
