"""P1: durable append of one 4-event turn to an existing session."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bench_store_common import Contender, Row, SQLiteSession, round_robin, turn_events, turn_items

from agent_host.session import open_store

FLOOR_BYTES = 1536


async def bench_append(work: Path, iterations: int) -> list[Row]:
    file_store = open_store((work / "p1-file").as_uri())
    sqlite_store = open_store(f"sqlite://{work / 'p1-store.db'}")
    peer = SQLiteSession("p1", str(work / "p1-peer.db"))
    sid = "p1"
    # An existing session: a few turns in before the clock starts.
    for i in range(5):
        await file_store.append(sid, turn_events(i))
        await sqlite_store.append(sid, turn_events(i))
        await peer.add_items(turn_items(i))
    floor_fd = os.open(work / "p1-floor.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    floor_buf = b"x" * (FLOOR_BYTES - 1) + b"\n"

    pending: dict[str, list] = {}

    async def prep_events(it: int) -> None:
        pending["events"] = turn_events(1000 + it)

    async def prep_items(it: int) -> None:
        pending["items"] = turn_items(1000 + it)

    async def file_append(it: int) -> None:
        await file_store.append(sid, pending["events"])

    async def sqlite_append(it: int) -> None:
        await sqlite_store.append(sid, pending["events"])

    async def peer_add(it: int) -> None:
        await peer.add_items(pending["items"])

    def write_fsync() -> None:
        os.write(floor_fd, floor_buf)
        os.fsync(floor_fd)

    async def floor(it: int) -> None:
        write_fsync()

    async def floor_thread(it: int) -> None:
        await asyncio.to_thread(write_fsync)

    contenders = [
        Contender("file store append (ours)", file_append, before=prep_events),
        Contender("sqlite store append (ours)", sqlite_append, before=prep_events),
        Contender("SQLiteSession.add_items (peer)", peer_add, before=prep_items),
        Contender("os.write + os.fsync 1.5 KB (floor)", floor),
        Contender("floor via asyncio.to_thread", floor_thread),
    ]
    await round_robin(contenders, iterations, warmup=max(10, iterations // 20))
    os.close(floor_fd)
    log = (work / "p1-file" / "sessions" / f"{sid}.jsonl").read_bytes()
    turn_bytes = len(log.rstrip(b"\0"))  # without the zeros appends write over
    events = len(await file_store.read(sid))
    await file_store.close()
    await sqlite_store.close()
    peer.close()
    f, s, p, fl, flt = (c.samples for c in contenders)
    note = f"one turn = {turn_bytes * 4 // events} bytes of framed JSONL in the file store"
    return [
        Row("file store append (ours) vs peer", f, p, "peer", limit_ratio=0.5),
        Row("file store append (ours) vs floor", f, fl, "floor", limit_ratio=2.0, note=note),
        Row("sqlite store append (ours) vs peer", s, p, "peer", limit_ratio=0.5, extra=True),
        Row("sqlite store append (ours) vs floor", s, fl, "floor", limit_ratio=2.0, extra=True),
        Row("SQLiteSession.add_items (peer)", p, fl, "floor"),
        Row("os.write + os.fsync 1.5 KB (floor)", fl),
        Row(
            "  same, via asyncio.to_thread",
            flt,
            fl,
            "floor",
            note="what any async store pays for one write+fsync off the event loop",
        ),
    ]
