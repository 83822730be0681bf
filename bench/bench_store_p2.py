"""P2: load a 1,000-turn (4,000-event) session into model messages from a cold store
object: as a resume does (its snapshot, see session.resume_snapshot), and by folding
the whole log (what a resume does without one)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from bench_store_common import Contender, Row, SQLiteSession, round_robin, turn_events, turn_items

from agent_host.session import open_store
from agent_host.session.conversation import to_messages
from agent_host.session.state import SessionState
from agent_host.session.timeline import timeline

TURNS = 1000


async def bench_load(work: Path, iterations: int) -> list[Row]:
    file_url = (work / "p2-file").as_uri()
    sqlite_url = f"sqlite://{work / 'p2-store.db'}"
    peer_db = str(work / "p2-peer.db")
    sid = "p2"
    batch = 50  # turns per append: same log, fewer fsyncs while building it
    for url in (file_url, sqlite_url):
        store = open_store(url)
        for start in range(0, TURNS, batch):
            turns = range(start, start + batch)
            await store.append(sid, [e for i in turns for e in turn_events(i)])
        # The snapshot a turn end writes, as a first resume of a log without one does.
        state = SessionState(store, sid)
        await state.refresh(full=False)
        assert state.loaded and (await store.read_snapshot(sid)) is not None
        await store.close()
    peer = SQLiteSession(sid, peer_db)
    for start in range(0, TURNS, batch):
        await peer.add_items([x for i in range(start, start + batch) for x in turn_items(i)])
    peer.close()

    held: dict[str, object] = {}
    ref_events = await _read_once(file_url, sid)
    expected = len(to_messages(ref_events))
    assert len(ref_events) == 4 * TURNS and expected == 4 * TURNS, (len(ref_events), expected)

    def cold(url: str) -> Callable[[int], Awaitable[None]]:
        async def before(it: int) -> None:
            held["store"] = open_store(url)

        return before

    async def close_store(it: int) -> None:
        await held.pop("store").close()  # type: ignore[attr-defined]

    async def load(it: int) -> None:
        # The engine folds the timeline (restores hide events) before the messages.
        held["out"] = to_messages(timeline(await held["store"].read(sid)))  # type: ignore[attr-defined]

    async def resume(it: int) -> None:
        # What AgentHost.resume and the turn after it do: the snapshot's header,
        # the log's last events, then the snapshot's conversation.
        state = SessionState(held["store"], sid)  # type: ignore[arg-type]
        await state.refresh(full=False)
        held["out"] = await state.messages()
        assert not state.loaded

    async def read_only(it: int) -> None:
        held["out"] = await held["store"].read(sid)  # type: ignore[attr-defined]

    def open_and_load(url: str) -> Callable[[int], Awaitable[None]]:
        async def run(it: int) -> None:
            held["store"] = open_store(url)
            held["out"] = to_messages(timeline(await held["store"].read(sid)))  # type: ignore[attr-defined]

        return run

    async def fold_only(it: int) -> None:
        held["out"] = to_messages(timeline(ref_events))

    async def peer_new(it: int) -> None:
        held["peer"] = SQLiteSession(sid, peer_db)

    async def peer_get(it: int) -> None:
        held["out"] = await held["peer"].get_items()  # type: ignore[attr-defined]

    async def peer_open_and_get(it: int) -> None:
        held["peer"] = SQLiteSession(sid, peer_db)
        held["out"] = await held["peer"].get_items()  # type: ignore[attr-defined]

    async def peer_close(it: int) -> None:
        held.pop("peer").close()  # type: ignore[attr-defined]

    async def check_messages(it: int) -> None:
        assert len(held.pop("out")) == expected  # type: ignore[arg-type]

    async def check_and_close(it: int) -> None:
        await check_messages(it)
        await close_store(it)

    async def check_and_close_peer(it: int) -> None:
        await check_messages(it)
        await peer_close(it)

    c = [
        Contender("file snapshot", resume, cold(file_url), check_and_close),
        Contender("sqlite snapshot", resume, cold(sqlite_url), check_and_close),
        Contender("file", load, cold(file_url), check_and_close),
        Contender("sqlite", load, cold(sqlite_url), check_and_close),
        Contender("peer", peer_get, peer_new, check_and_close_peer),
        Contender("file read", read_only, cold(file_url), check_and_close),
        Contender("sqlite read", read_only, cold(sqlite_url), check_and_close),
        Contender("fold", fold_only, None, check_messages),
        Contender("file open+load", open_and_load(file_url), None, check_and_close),
        Contender("peer open+get", peer_open_and_get, None, check_and_close_peer),
    ]
    await round_robin(c, iterations, warmup=3)
    file_snap, sql_snap, file, sql, peer_s = (x.samples for x in c[:5])
    file_read, sql_read, fold, file_open, peer_open = (x.samples for x in c[5:])
    log = (work / "p2-file" / "sessions" / f"{sid}.jsonl").read_bytes()
    size = len(log.rstrip(b"\0"))  # without the zeros appends write over
    snap = (work / "p2-file" / "snapshots" / f"{sid}.snap").stat().st_size
    return [
        Row(
            "file: resume from snapshot (ours)",
            file_snap,
            peer_s,
            "peer",
            limit_ratio=0.5,
            note=f"log is {size / 1e6:.2f} MB, {4 * TURNS} events; snapshot {snap / 1e6:.2f} MB; "
            "cold store object, warm page cache",
        ),
        Row("sqlite: resume from snapshot (ours)", sql_snap, peer_s, "peer", limit_ratio=0.5),
        Row("  file: to_messages(read()), no snapshot", file, peer_s, "peer"),
        Row("  sqlite: to_messages(read()), no snapshot", sql, peer_s, "peer"),
        Row("SQLiteSession.get_items() (peer)", peer_s),
        Row("  file: read() alone", file_read, peer_s, "peer"),
        Row("  sqlite: read() alone", sql_read, peer_s, "peer"),
        Row("  to_messages() alone", fold, peer_s, "peer"),
        Row("  file: open_store()+read+fold", file_open, peer_open, "peer"),
        Row("  peer: SQLiteSession()+get_items", peer_open),
    ]


async def _read_once(url: str, sid: str) -> list:
    store = open_store(url)
    try:
        return await store.read(sid)
    finally:
        await store.close()
