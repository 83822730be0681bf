"""Several writers on one session: nothing forks, nothing is lost, batches stay whole.

The durable stores (file, sqlite) are shared by real OS processes (see _writer.py);
the memory store lives in one event loop, so its writers are asyncio tasks.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from agent_host.session import CheckpointConflictError
from agent_host.session.events import AssistantMessage, UserPrompt

from ._writer import run_turns, tag_of
from .logs import content

pytestmark = pytest.mark.slow

WRITER = Path(__file__).with_name("_writer.py")
WORKERS = 4
TURNS = 50
SESSION = "shared"
TAG = re.compile(r"w(\d+)-(\d+)-(\d+)/(\d+)")


# -- running the writers


def run_writer_processes(backend, tmp_path: Path, cas: bool) -> list[dict]:
    """Start WORKERS writer processes, release them at once, return their reports."""
    procs = []
    outs = []
    go = tmp_path / "go"
    for w in range(WORKERS):
        out = tmp_path / f"out-{w}.json"
        config = {
            "mode": "turns",
            "url": backend.url,
            "session": SESSION,
            "worker": w,
            "n": TURNS,
            "cas": cas,
            "seed": 1000 + w,
            "ready": str(tmp_path / f"ready-{w}"),
            "go": str(go),
            "out": str(out),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WRITER), json.dumps(config)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
        outs.append(out)
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready-{w}").exists() for w in range(WORKERS)):
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.002)
        go.touch()  # every writer starts its first turn now
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, f"writer failed ({p.returncode}):\n{err.decode()}"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [json.loads(out.read_text()) for out in outs]


async def run_writer_tasks(store, cas: bool) -> list[dict]:
    """The same writers as asyncio tasks on one store instance, released together."""
    go = asyncio.Event()
    tasks = [
        asyncio.create_task(run_turns(store, SESSION, w, TURNS, cas, 1000 + w, go.wait))
        for w in range(WORKERS)
    ]
    await asyncio.sleep(0)
    go.set()
    return await asyncio.gather(*tasks)


async def run_writers(backend, tmp_path: Path, cas: bool) -> list[dict]:
    if backend.durable:
        return await asyncio.to_thread(run_writer_processes, backend, tmp_path, cas)
    return await run_writer_tasks(backend.open(), cas)


# -- checking the log


def check_log(events, reports: list[dict]) -> int:
    """The log holds every worker's every batch once, whole, where append said.

    * seqs are exactly 1..len(events);
    * the events of each batch are adjacent and in order (never interleaved);
    * each (worker, turn) appears exactly once, with the size the worker wrote;
    * each worker's turns appear in the order it appended them;
    * the head append returned for a batch is the seq of the batch's last event.

    Returns how often consecutive batches come from different writers.
    """
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    batches: list[tuple[int, int, int, int]] = []  # worker, turn, size, last seq
    open_batch: tuple[int, int, int] | None = None
    expect_part = 1
    for event in events:
        m = TAG.fullmatch(tag_of(event))
        assert m, f"seq {event.seq}: unexpected event {event!r}"
        worker, turn, part, size = map(int, m.groups())
        if open_batch is None:
            assert part == 1, f"seq {event.seq}: batch w{worker}-{turn} starts at part {part}"
            open_batch, expect_part = (worker, turn, size), 1
        assert (worker, turn, size) == open_batch and part == expect_part, (
            f"seq {event.seq}: {tag_of(event)} interleaved into batch "
            f"w{open_batch[0]}-{open_batch[1]} (expected part {expect_part})"
        )
        if part == size:
            batches.append((worker, turn, size, event.seq))
            open_batch = None
        else:
            expect_part += 1
    assert open_batch is None, f"log ends inside batch {open_batch}"

    seen = [(w, t) for w, t, _, _ in batches]
    assert len(seen) == len(set(seen)), "a batch was written twice"
    by_worker = {r["worker"]: r for r in reports}
    assert sorted(seen) == [(w, t) for w in range(WORKERS) for t in range(TURNS)]
    for w in range(WORKERS):
        in_log = [(t, size, last) for ww, t, size, last in batches if ww == w]
        assert in_log == [tuple(a) for a in by_worker[w]["appended"]], (
            f"worker {w}: batches in the log (turn, size, seq) differ from what append returned"
        )
    # How often the log switches writer: 0 would mean the writers never overlapped.
    return sum(a[0] != b[0] for a, b in zip(batches, batches[1:], strict=False))


# -- tests


@pytest.mark.parametrize("cas", [True, False], ids=["expected_head", "blind"])
async def test_concurrent_writers_neither_fork_nor_lose(backend, tmp_path, cas):
    """4 writers x 50 turns on one session, started together: every batch lands once,
    whole and in per-writer order, and seqs stay 1..N with no gap or duplicate.

    ``expected_head``: each turn reads the head and appends with it, retrying on
    CheckpointConflictError. ``blind``: appends with no expected_head.
    Durable stores run the writers as separate processes; memory as asyncio tasks.
    """
    started = time.monotonic()
    reports = await run_writers(backend, tmp_path, cas)
    elapsed = time.monotonic() - started

    store = backend.open()
    try:
        events = await store.read(SESSION)
        total = sum(k for r in reports for _, k, _ in r["appended"])
        assert await store.head(SESSION) == total == len(events)
        switches = check_log(events, reports)
        [info] = [i for i in await store.list() if i.id == SESSION]
        assert info.head == total
        assert info.turns == WORKERS * TURNS  # one UserPrompt per batch
    finally:
        if backend.durable:
            await store.close()
    conflicts = sum(r["conflicts"] for r in reports)
    print(
        f"{backend.name} {'expected_head' if cas else 'blind'}: {total} events, "
        f"{conflicts} conflicts retried, {switches} writer switches in the log, {elapsed:.2f}s"
    )


async def test_two_instances_never_act_on_a_stale_view(backend):
    """Two store instances on one store (as two processes would hold): each sees the
    other's appends, and one acting on a head it read before the other appended gets
    CheckpointConflictError and writes nothing (the session never forks)."""
    a, b = backend.open(), backend.open()
    try:
        assert await a.append(SESSION, [UserPrompt(text="a1"), AssistantMessage(text="a2")]) == 2
        assert [e.text for e in await b.read(SESSION)] == ["a1", "a2"]
        head_b = await b.head(SESSION)
        assert head_b == 2
        assert (
            await b.append(SESSION, [UserPrompt(text="b3"), AssistantMessage(text="b4")], head_b)
            == 4
        )

        # a last saw head 2 (its own append); b has moved the session on since.
        with pytest.raises(CheckpointConflictError) as conflict:
            await a.append(SESSION, [UserPrompt(text="stale")], expected_head=2)
        assert (conflict.value.expected_head, conflict.value.actual_head) == (2, 4)

        seen = await a.read(SESSION)
        assert [(e.seq, e.text) for e in seen] == [(1, "a1"), (2, "a2"), (3, "b3"), (4, "b4")]
        assert await a.head(SESSION) == 4
        assert [e.text for e in await a.read(SESSION, since_seq=2)] == ["b3", "b4"]

        assert await a.append(SESSION, [UserPrompt(text="a5")], expected_head=4) == 5
        assert [(e.seq, e.text) for e in await b.read(SESSION, since_seq=4)] == [(5, "a5")]
        with pytest.raises(CheckpointConflictError):
            await b.append(SESSION, [UserPrompt(text="stale")], expected_head=4)
        assert [e.text for e in await b.read(SESSION)] == ["a1", "a2", "b3", "b4", "a5"]
    finally:
        if backend.durable:
            await a.close()
            await b.close()


def _log_file(backend, session_id: str) -> Path:
    return Path(unquote(urlsplit(backend.url).path)) / "sessions" / f"{session_id}.jsonl"


def plain(event) -> str:
    return event.text.rstrip(".")


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    starts += [i + 1 for i, c in enumerate(data) if c == 0x0A]
    return starts[:-1]


@pytest.mark.parametrize("rewrite", ["same_size", "grown"])
async def test_rewritten_log_is_not_read_through_a_stale_cache(backend, rewrite):
    """Instance A truncates the session to seq 2 and appends new events; instance B,
    which had read the old log, must read the new events, not its cached view.

    ``same_size``: the new log has the same event count and (file store) exactly the
    same byte size as B last saw, but with lines of other lengths, so only a
    content check can tell it changed. ``grown``: one event more than before (a
    stale view would take the new bytes for a torn tail and cut acknowledged data).
    """
    a, b = backend.open(), backend.open()
    pad = 10
    try:
        old = [UserPrompt(text="old-1")] + [
            AssistantMessage(text=f"old-{i}" + "." * pad) for i in range(2, 6)
        ]
        assert await a.append(SESSION, old) == 5
        # B reads everything and remembers it (the file store caches offsets/size).
        assert [plain(e) for e in await b.read(SESSION)] == [f"old-{i}" for i in range(1, 6)]
        assert await b.head(SESSION) == 5
        path = _log_file(backend, SESSION) if backend.name == "file" else None
        old_bytes = content(path) if path else b""

        if rewrite == "same_size":
            # Shift bytes from event 3 to event 5 so lines move but the total may not.
            pads = [pad - 6, pad, pad + 6]
            for _attempt in range(50):
                await a.truncate(SESSION, 2)
                new = [
                    AssistantMessage(text=f"new-{i}" + "." * p)
                    for i, p in zip((3, 4, 5), pads, strict=True)
                ]
                assert await a.append(SESSION, new) == 5
                if path is None:
                    break
                diff = len(content(path)) - len(old_bytes)
                if diff == 0:
                    break
                pads[2] -= diff  # the timestamp's width changed; compensate and redo
            else:
                pytest.fail("could not rewrite the log to the same byte size")
            expected = ["new-3", "new-4", "new-5"]
        else:
            await a.truncate(SESSION, 2)
            # Event 3 shorter than before, so the old end of the log falls mid-line.
            pads = [pad - 6, pad, pad, pad]
            new = [
                AssistantMessage(text=f"new-{i}" + "." * p)
                for i, p in zip((3, 4, 5, 6), pads, strict=True)
            ]
            assert await a.append(SESSION, new) == 6
            expected = ["new-3", "new-4", "new-5", "new-6"]

        if path and rewrite == "same_size":
            new_bytes = content(path)
            assert len(new_bytes) == len(old_bytes) and new_bytes != old_bytes
            assert _line_starts(new_bytes)[3:] != _line_starts(old_bytes)[3:]  # lines moved

        head = 2 + len(expected)
        texts = ["old-1", "old-2"] + expected
        assert await b.head(SESSION) == head
        got = await b.read(SESSION, since_seq=3)  # needs the offset of event 4
        assert [(e.seq, plain(e)) for e in got] == list(
            zip(range(4, head + 1), texts[3:], strict=True)
        )
        got = await b.read(SESSION)
        assert [(e.seq, plain(e)) for e in got] == list(zip(range(1, head + 1), texts, strict=True))

        # B's next append builds on the new log, and A (and a fresh instance) see it.
        with pytest.raises(CheckpointConflictError):
            await b.append(SESSION, [UserPrompt(text="stale")], expected_head=head + 1)
        assert await b.append(SESSION, [UserPrompt(text="b-next")], expected_head=head) == head + 1
        fresh = backend.open()
        for reader in (a, fresh):
            got = await reader.read(SESSION)
            assert [(e.seq, plain(e)) for e in got] == list(
                zip(range(1, head + 2), texts + ["b-next"], strict=True)
            )
        if backend.durable:
            await fresh.close()
        if path:
            assert len(content(path)) > len(old_bytes) or rewrite == "same_size"
            assert not (path.parent.parent / "torn").exists(), "good data was cut as torn"
    finally:
        if backend.durable:
            await a.close()
            await b.close()
