"""A writer that dies mid-append never leaves a partial batch, a gap, or a lost ack.

The durable stores (file, sqlite) are written by a separate process that is killed
with SIGKILL at a random moment, again and again on one session; the memory store
cannot outlive a crash, so its writer is an asyncio task cancelled at random. The
file store's torn-tail repair and its refusal to cut damaged acknowledged data
are pinned deterministically at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from agent_host.session import CorruptLogError
from agent_host.session.events import AssistantMessage, ToolCall, UserPrompt

from ...conftest import BACKENDS, make_backend
from ._writer import batch, tag_of
from .logs import content, write_at_content_end

pytestmark = pytest.mark.slow

WRITER = Path(__file__).with_name("_writer.py")
ROUNDS = 25
SESSION = "crashy"
BATCH_TAG = re.compile(r"b(\d+)-(\d+)-(\d+)/(\d+)")
PROBE_TAG = re.compile(r"probe-(\d+)")


def crash_seed() -> int:
    """AGENT_HOST_CRASH_SEED replays a run's kill timings; otherwise a new seed."""
    seed = int(os.environ.get("AGENT_HOST_CRASH_SEED") or random.SystemRandom().randrange(2**32))
    print(f"crash seed: {seed} (set AGENT_HOST_CRASH_SEED={seed} to replay)")
    return seed


def store_root(backend) -> Path:
    return Path(unquote(urlsplit(backend.url).path))


# -- the invariants checked after every crash


def check_crash_log(events, acked: list[tuple[int, int, int, int]], this_round: int) -> None:
    """What a log must look like after a writer died at any moment.

    * seqs are exactly 1..head;
    * every batch ``b<round>-<k>-<i>/<n>`` is whole: its n events adjacent, in order;
    * each round's batches are k = 1, 2, ... K (none lost, none twice), followed by
      the test's ``probe-<round>`` event for every round already checked;
    * every acknowledged append ``(head, round, k, n)`` is there, its batch ending
      exactly at the head append returned for it.
    """
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "gap or reorder in seqs"
    units: list[tuple[int, int, int, int]] = []  # round, k (0 = probe), n, last seq
    i = 0
    while i < len(events):
        tag = tag_of(events[i])
        if probe := PROBE_TAG.fullmatch(tag):
            units.append((int(probe.group(1)), 0, 1, events[i].seq))
            i += 1
            continue
        m = BATCH_TAG.fullmatch(tag)
        assert m, f"seq {events[i].seq}: unexpected event {tag!r}"
        rnd, k, part, n = map(int, m.groups())
        assert part == 1, f"seq {events[i].seq}: batch b{rnd}-{k} starts with part {part}/{n}"
        parts = [tag_of(e) for e in events[i : i + n]]
        assert parts == [f"b{rnd}-{k}-{p}/{n}" for p in range(1, n + 1)], (
            f"seq {events[i].seq}: partial or interleaved batch b{rnd}-{k}: {parts}"
        )
        units.append((rnd, k, n, events[i + n - 1].seq))
        i += n

    rounds = [u[0] for u in units]
    assert rounds == sorted(rounds), "rounds out of order"
    for rnd in range(1, this_round + 1):
        ks = [k for r, k, _, _ in units if r == rnd]
        batches = ks[:-1] if rnd < this_round else ks
        assert batches == list(range(1, len(batches) + 1)), (
            f"round {rnd}: batches {batches} lost, repeated or reordered"
        )
        if rnd < this_round:
            assert ks[-1:] == [0], f"round {rnd}: the probe append is missing or misplaced"
    assert not any(r > this_round for r in rounds)

    where = {(r, k): (n, last) for r, k, n, last in units}
    for head, rnd, k, n in acked:
        assert (rnd, k) in where, f"acknowledged batch b{rnd}-{k} (head {head}) is lost"
        assert where[(rnd, k)] == (n, head), (
            f"acknowledged batch b{rnd}-{k}: append returned head {head} for {n} events, "
            f"the log has {where[(rnd, k)][0]} events ending at {where[(rnd, k)][1]}"
        )
    if acked:
        assert len(events) >= max(a[0] for a in acked)


def read_acks(path: Path) -> list[tuple[int, int, int, int]]:
    """Acknowledged appends: only whole lines count (the writer may die mid-line)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")[:-1]
    return [tuple(map(int, line.split())) for line in lines]  # type: ignore[misc]


# -- the crash tests


def wait_for_backends_of(url: str, pid: int, timeout: float = 30.0) -> None:
    """Until the server has no connection left of process ``pid`` (application_name):
    its pooled ones, and its lease connection, whose advisory locks go with it."""
    import psycopg

    from agent_host.session.store.postgres_leases import APP_PREFIX

    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            (left,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE application_name = %s OR application_name LIKE %s",
                (f"agent-host {pid}", f"{APP_PREFIX}{pid} %"),
            ).fetchone()
            if left == 0:
                return
            time.sleep(0.01)
    raise AssertionError(f"the server still runs statements of dead process {pid}")


async def crash_durable(backend, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    ack = tmp_path / "ack"
    stats = {"unacked": 0, "torn": 0, "batches": 0}
    for rnd in range(1, ROUNDS + 1):
        ready = tmp_path / f"ready-{rnd}"
        config = {
            "mode": "crash",
            "url": backend.url,
            "session": SESSION,
            "round": rnd,
            "seed": rng.randrange(2**32),
            "ack": str(ack),
            "ready": str(ready),
        }
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), json.dumps(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
            assert ready.exists(), f"round {rnd}: writer never got going"
            await asyncio.sleep(rng.uniform(0.020, 0.300))
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL, (
            f"round {rnd}: the writer died on its own ({proc.returncode}):\n{err.decode()}"
        )
        if backend.name == "postgres":
            # The server finishes a statement the writer had sent (and commits it)
            # after the writer died: what is stored is settled once that is done.
            await asyncio.to_thread(wait_for_backends_of, backend.url, proc.pid)

        acked = read_acks(ack)
        last_acked = acked[-1][0] if acked else 0
        store = backend.open()  # as a restarted server would
        try:
            if backend.name == "file":
                # list() first: the index must recover from the crash by itself.
                listed = {i.id: i.head for i in await store.list()}
            events = await store.read(SESSION)
            head = await store.head(SESSION)
            assert head == len(events), f"round {rnd}: head {head}, {len(events)} events"
            assert head >= last_acked, f"round {rnd}: head {head} < acknowledged {last_acked}"
            check_crash_log(events, acked, rnd)
            if backend.name == "file":
                assert listed.get(SESSION) == head, f"round {rnd}: list() says {listed}"
            # The repaired log takes the next append where it should.
            probe = [UserPrompt(text=f"probe-{rnd}")]
            assert await store.append(SESSION, probe, expected_head=head) == head + 1
            assert [tag_of(e) for e in await store.read(SESSION, head)] == [f"probe-{rnd}"]
            if backend.name == "file":
                assert {i.id: i.head for i in await store.list()}[SESSION] == head + 1
        finally:
            await store.close()
        stats["unacked"] += head > last_acked
        stats["batches"] = len(acked)
    if backend.name == "file":
        torn = store_root(backend) / "torn"
        stats["torn"] = len(list(torn.iterdir())) if torn.exists() else 0
    print(
        f"{backend.name}: {ROUNDS} kills, {stats['batches']} acknowledged batches; "
        f"{stats['unacked']} kills after a write but before its ack"
        + (f"; {stats['torn']} torn tails cut" if backend.name == "file" else "")
    )


async def cancel_memory(backend, seed: int) -> None:
    rng = random.Random(seed)
    store = backend.open()
    acked: list[tuple[int, int, int, int]] = []
    last = {"head": 0}  # the head the last append that returned left
    for rnd in range(1, ROUNDS + 1):
        writer_rng = random.Random(rng.randrange(2**32))

        async def write(rnd: int = rnd, writer_rng: random.Random = writer_rng) -> None:
            head = await store.head(SESSION)
            k = 0
            while True:
                k += 1
                n = writer_rng.randint(2, 4)
                big_at = writer_rng.randint(2, n) if k % 3 == 0 else None
                events = batch(f"b{rnd}-{k}", n, big_at)
                head = await store.append(SESSION, events, expected_head=head)
                acked.append((head, rnd, k, n))
                last["head"] = head
                await asyncio.sleep(0)

        task = asyncio.create_task(write())
        await asyncio.sleep(rng.uniform(0.0005, 0.005))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        events = await store.read(SESSION)
        head = await store.head(SESSION)
        assert head == len(events)
        check_crash_log(events, acked, rnd)
        assert head == last["head"]  # nothing beyond what the last append returned
        probe = [UserPrompt(text=f"probe-{rnd}")]
        assert await store.append(SESSION, probe, expected_head=head) == head + 1
        last["head"] = head + 1
    print(f"memory: {ROUNDS} cancellations, {len(acked)} acknowledged batches")


# Not on in-memory SQLite: it dies only with this process, and an append goes on in
# its worker thread after its task is cancelled, so there is no writer to kill (the
# sqlite backend kills one).
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
async def test_killed_writer_leaves_whole_batches_and_every_ack(backend, tmp_path):
    """25 times in a row a writer appending 2-4 event batches (some ~64 KB) is killed
    (SIGKILL; memory: task cancelled) at a random moment. After each: seqs are 1..head,
    every batch is whole, every acknowledged append is there at the head it returned,
    the file store's list() shows the right head, and the log takes the next append."""
    seed = crash_seed()
    if backend.durable:
        await crash_durable(backend, tmp_path, seed)
    else:
        await cancel_memory(backend, seed)


# -- the file store's torn-tail repair, deterministically


def log_path(backend, session_id: str) -> Path:
    return store_root(backend) / "sessions" / f"{session_id}.jsonl"


def acknowledged_events() -> list:
    return [
        UserPrompt(text="one"),
        AssistantMessage(text="two"),
        ToolCall(call_id="c3", name="read_file", arguments={"path": "x"}),
    ]


async def append_then_tear(backend, torn_bytes) -> tuple[Path, bytes, bytes]:
    """Append 3 events, then add ``torn_bytes(line)`` after them on disk, where
    ``line`` is a whole line as the store would write for a 4th event."""
    store = backend.open()
    assert await store.append(SESSION, acknowledged_events()) == 3
    path = log_path(backend, SESSION)
    good = content(path)
    assert await store.append(SESSION, [AssistantMessage(text="four " * 20)]) == 4
    line = content(path)[len(good) :]
    await store.close()
    garbage = torn_bytes(line)
    write_at_content_end(path, len(good), garbage)
    return path, good, garbage


def _random_bytes(newline: bool):
    def make(_line: bytes) -> bytes:
        data = bytearray(random.Random(7 if newline else 8).randbytes(300))
        data[-1] = ord("\n") if newline else ord("z")
        return bytes(data)

    return make


TEARS = {
    "half_line": lambda line: line[: len(line) // 2],
    "line_without_newline": lambda line: line[:-1],
    "random_bytes_with_newline": _random_bytes(True),
    "random_bytes_without_newline": _random_bytes(False),
}


@pytest.fixture
def file_backend(tmp_path):
    """The file store alone: torn tails and byte damage are its concern (sqlite's
    journal and the memory store have no bytes to tear)."""
    return make_backend("file", tmp_path)


@pytest.mark.parametrize("tear", TEARS)
async def test_file_torn_tail_is_cut_aside_and_log_stays_writable(file_backend, tear):
    """Bytes after the last whole event (a crash mid-write) are moved to torn/ on the
    next open: reads return exactly the acknowledged events, the log is cut back to
    them, and the next append gets the next seq."""
    path, good, garbage = await append_then_tear(file_backend, TEARS[tear])
    torn_dir = store_root(file_backend) / "torn"
    assert not torn_dir.exists()

    store = file_backend.open()
    try:
        events = await store.read(SESSION)
        assert [(e.seq, tag_of(e)) for e in events] == [(1, "one"), (2, "two"), (3, "c3")]
        assert await store.head(SESSION) == 3
        assert path.read_bytes() == good
        kept = list(torn_dir.iterdir())
        assert len(kept) == 1 and kept[0].read_bytes() == garbage
        assert await store.append(SESSION, [UserPrompt(text="next")], expected_head=3) == 4
        assert {i.id: i.head for i in await store.list()}[SESSION] == 4
    finally:
        await store.close()
    again = file_backend.open()
    assert [(e.seq, tag_of(e)) for e in await again.read(SESSION)] == [
        (1, "one"),
        (2, "two"),
        (3, "c3"),
        (4, "next"),
    ]
    assert len(list(torn_dir.iterdir())) == 1


async def test_file_torn_batch_is_cut_back_whole(file_backend):
    """A crash can persist part of a multi-event append (a short write, or power loss
    before fdatasync): the next open must drop the whole unacknowledged batch, never
    keep its first events (append is all-or-nothing)."""
    store = file_backend.open()
    assert await store.append(SESSION, acknowledged_events()) == 3
    path = log_path(file_backend, SESSION)
    good = content(path)
    assert await store.append(SESSION, batch("b1-1", 3, big_at=2)) == 6
    data = content(path)
    await store.close()
    first_line_end = data.index(b"\n", len(good)) + 1
    # The batch's first event reached the disk, its second only partly, its third not.
    path.write_bytes(data[: first_line_end + 1000])

    store = file_backend.open()
    try:
        events = await store.read(SESSION)
        assert [tag_of(e) for e in events] == ["one", "two", "c3"]
    finally:
        await store.close()


async def test_file_damage_before_the_tail_raises_and_cuts_nothing(file_backend):
    """A damaged line followed by whole ones is not a torn tail but corruption of
    acknowledged data: read, head and append raise CorruptLogError naming the file,
    and the file is left exactly as it was."""
    store = file_backend.open()
    assert await store.append(SESSION, acknowledged_events()) == 3
    assert await store.append(SESSION, [AssistantMessage(text="four")]) == 4
    await store.close()
    path = log_path(file_backend, SESSION)
    data = bytearray(path.read_bytes())
    second = data.index(b"\n") + 1
    spot = data.index(b'"two"', second) + 2  # inside event 2's text
    data[spot] ^= 0x01
    damaged = bytes(data)
    path.write_bytes(damaged)

    store = file_backend.open()
    try:
        for attempt in (
            lambda: store.read(SESSION),
            lambda: store.head(SESSION),
            lambda: store.read(SESSION, since_seq=3),
            lambda: store.append(SESSION, [UserPrompt(text="five")]),
        ):
            with pytest.raises(CorruptLogError) as raised:
                await attempt()
            assert str(path) in str(raised.value)
            assert path.read_bytes() == damaged
    finally:
        await store.close()
    assert not (store_root(file_backend) / "torn").exists()
