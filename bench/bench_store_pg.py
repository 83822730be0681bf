#!/usr/bin/env python
"""The PostgreSQL store against the OpenAI Agents SDK's SQLAlchemySession (asyncpg) on
the same local server, in the same run.

    python bench/bench_store_pg.py              # P1, P2, P3, P7
    python bench/bench_store_pg.py --quick      # fewer iterations
    python bench/bench_store_pg.py --scale      # and the scale run (100,000 sessions,
                                                # 10M events, bulk-loaded with COPY)
    AGENT_HOST_BENCH_PG=postgresql://u@host/db  # the server (default: the local one)

P1  durable append of one 4-event turn to an existing session
P2  load a 1,000-turn (4,000-event) session into model messages (cold store object)
P3  list of 10,000 sessions (all of them; and the first page of 50)
P7  4 processes appending 4-event turns to one session: none lost or duplicated,
    throughput against one process alone

Each run creates a database of its own on the server and drops it at the end.
Needs the bench extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from bench_store_common import Contender, Row, print_section, round_robin, turn_events, turn_items

from agent_host.session import open_store
from agent_host.session.conversation import to_messages
from agent_host.session.events import AssistantMessage, UserPrompt
from agent_host.session.state import SessionState
from agent_host.session.timeline import timeline

try:
    from agents.extensions.memory import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine
except ImportError:  # pragma: no cover
    sys.exit("the peer is missing: pip install -e '.[bench]' (openai-agents[sqlalchemy])")

ADMIN = os.environ.get("AGENT_HOST_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
TURNS = 1000
SESSIONS = 10_000
WORKERS = 4


def database_url(name: str) -> str:
    return urlsplit(ADMIN)._replace(path=f"/{name}").geturl()


def peer_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+asyncpg://", 1)


# -- P1


async def p1(url: str, iterations: int) -> list[Row]:
    store = open_store(url + "?schema=p1")
    engine = create_async_engine(peer_url(url))
    peer = SQLAlchemySession("p1", engine=engine, create_tables=True)
    for i in range(5):
        await store.append("p1", turn_events(i))
        await peer.add_items(turn_items(i))
    pending: dict[str, list] = {}
    # As the engine appends: with the head it last saw (one round trip; see
    # PostgresCheckpointer._append_batch).
    held = {"head": await store.head("p1")}

    async def prep_events(it: int) -> None:
        pending["events"] = turn_events(1000 + it)

    async def prep_items(it: int) -> None:
        pending["items"] = turn_items(1000 + it)

    async def ours(it: int) -> None:
        held["head"] = await store.append("p1", pending["events"], held["head"])

    async def theirs(it: int) -> None:
        await peer.add_items(pending["items"])

    c = [
        Contender("postgres store append", ours, before=prep_events),
        Contender("SQLAlchemySession.add_items", theirs, before=prep_items),
    ]
    await round_robin(c, iterations, warmup=max(10, iterations // 20))
    assert await store.head("p1") == 4 * (5 + iterations + max(10, iterations // 20))
    await store.close()
    await engine.dispose()
    o, p = (x.samples for x in c)
    return [
        Row("P1 postgres store append (ours)", o, p, "peer", limit_ratio=0.5),
        Row("P1 SQLAlchemySession.add_items (peer)", p),
    ]


# -- P2


async def p2(url: str, iterations: int) -> list[Row]:
    ours_url = url + "?schema=p2"
    store = open_store(ours_url)
    engine = create_async_engine(peer_url(url))
    peer = SQLAlchemySession("p2", engine=engine, create_tables=True)
    for start in range(0, TURNS, 50):
        turns = range(start, start + 50)
        await store.append("p2", [e for i in turns for e in turn_events(i)])
        await peer.add_items([x for i in turns for x in turn_items(i)])
    # The snapshot a turn end writes, as a first resume of a log without one does.
    state = SessionState(store, "p2")
    await state.refresh(full=False)
    assert state.loaded and (await store.read_snapshot("p2")) is not None
    await store.close()
    await engine.dispose()
    held: dict[str, object] = {}

    async def resume(it: int) -> None:
        # What AgentHost.resume and the turn after it do: the snapshot's header,
        # the log's last events, then the snapshot's conversation.
        resumed = SessionState(held["store"], "p2")  # type: ignore[arg-type]
        await resumed.refresh(full=False)
        held["out"] = await resumed.messages()
        assert not resumed.loaded

    async def warm_resume(it: int) -> None:
        resumed = SessionState(warm_store, "p2")
        await resumed.refresh(full=False)
        assert len(await resumed.messages()) == 4 * TURNS and not resumed.loaded

    async def cold_ours(it: int) -> None:
        held["store"] = open_store(ours_url)

    async def load(it: int) -> None:
        events = await held["store"].read("p2")  # type: ignore[attr-defined]
        held["out"] = to_messages(timeline(events))

    async def done_ours(it: int) -> None:
        assert len(held.pop("out")) == 4 * TURNS  # type: ignore[arg-type]
        await held.pop("store").close()  # type: ignore[attr-defined]

    async def cold_peer(it: int) -> None:
        held["engine"] = create_async_engine(peer_url(url))
        held["peer"] = SQLAlchemySession("p2", engine=held["engine"])

    async def get(it: int) -> None:
        held["out"] = await held["peer"].get_items()  # type: ignore[attr-defined]

    async def done_peer(it: int) -> None:
        assert len(held.pop("out")) == 4 * TURNS  # type: ignore[arg-type]
        held.pop("peer")
        await held.pop("engine").dispose()  # type: ignore[attr-defined]

    warm_store = open_store(ours_url)
    warm_engine = create_async_engine(peer_url(url))
    warm_peer = SQLAlchemySession("p2", engine=warm_engine)
    await warm_store.read("p2")
    await warm_peer.get_items()

    async def warm_load(it: int) -> None:
        assert len(to_messages(timeline(await warm_store.read("p2")))) == 4 * TURNS

    async def warm_get(it: int) -> None:
        assert len(await warm_peer.get_items()) == 4 * TURNS

    c = [
        Contender("ours snapshot cold", resume, cold_ours, done_ours),
        Contender("ours cold", load, cold_ours, done_ours),
        Contender("peer cold", get, cold_peer, done_peer),
        Contender("ours snapshot warm", warm_resume),
        Contender("ours warm", warm_load),
        Contender("peer warm", warm_get),
    ]
    await round_robin(c, iterations, warmup=3)
    await warm_store.close()
    await warm_engine.dispose()
    sc, oc, pc, sw, ow, pw = (x.samples for x in c)
    return [
        Row("P2 resume from snapshot, new store (ours)", sc, pc, "peer", limit_ratio=0.5),
        Row("P2 get_items(), new engine (peer)", pc),
        Row("  resume from snapshot, store kept open (ours)", sw, pw, "peer", limit_ratio=0.5),
        Row("  get_items(), engine kept open (peer)", pw),
        Row("  to_messages(read()), no snapshot, new store", oc, pc, "peer"),
        Row("  to_messages(read()), no snapshot, store kept open", ow, pw, "peer"),
    ]


# -- P3


async def p3(url: str, iterations: int) -> list[Row]:
    store_url = url + "?schema=p3"
    store = open_store(store_url)
    await bulk_sessions(store_url, "p3", SESSIONS, events_each=2)
    assert len(await store.list()) == SESSIONS

    async def list_all(it: int) -> None:
        assert len(await store.list()) == SESSIONS

    async def first_page(it: int) -> None:
        assert len(await store.list_page(50)) == 50

    c = [Contender("list", list_all), Contender("page", first_page)]
    await round_robin(c, iterations, warmup=5)
    await store.close()
    full, page = (x.samples for x in c)
    return [
        Row("P3 list() of 10,000 sessions (ours)", full, limit_ms=30),
        Row("  list_page(50), the first page (ours)", page, limit_ms=30),
    ]


async def bulk_sessions(store_url: str, schema: str, sessions: int, events_each: int) -> None:
    """``sessions`` sessions of ``events_each`` events, COPYed in: a prompt, then
    replies; the JSON the store writes and the summaries it keeps, made in seconds
    (the replies are encoded once and shared, their times all one)."""
    from agent_host.session import events as ev
    from agent_host.session.store.summary import make_title

    conninfo = store_url.split("?")[0]
    now = time.time()
    reply = AssistantMessage(text="Done: the test waited on a timer; now it awaits.")
    replies = [ev.encode(reply, seq, now) for seq in range(2, events_each + 1)]
    with psycopg.connect(conninfo) as conn:
        with conn.cursor() as cur:
            with cur.copy(f"COPY {schema}.events (session_id, seq, data) FROM STDIN") as copy:
                for n in range(sessions):
                    sid = f"session-{n:07d}"
                    copy.write_row((sid, 1, ev.encode(_prompt(n), 1, now)))
                    for seq, data in enumerate(replies, 2):
                        copy.write_row((sid, seq, data))
            with cur.copy(
                f"COPY {schema}.sessions (id, created_at, updated_at, head, turns, title, "
                "workspace) FROM STDIN"
            ) as copy:
                for n in range(sessions):
                    ts = now - (sessions - n)
                    title = make_title(_prompt(n).text)
                    copy.write_row((f"session-{n:07d}", ts, ts, events_each, 1, title, ""))
        conn.execute(f"ANALYZE {schema}.sessions")
        conn.execute(f"ANALYZE {schema}.events")


def _prompt(n: int) -> UserPrompt:
    return UserPrompt(text=f"Session {n}: fix the flaky test in tests/test_{n % 300}.py")


# -- P7


def p7(url: str, turns: int) -> list[str]:
    store_url = url + "?schema=p7"
    open_store(store_url)  # migrate once, before the clocks start
    lines = []
    single = run_workers(store_url, "one", 1, turns * WORKERS)
    many = run_workers(store_url, "four", WORKERS, turns)
    for label, (elapsed, events, lost, dup) in (("1 process", single), ("4 processes", many)):
        lines.append(
            f"P7 {label:<12} {events:>6} events in {elapsed:6.2f}s = {events / elapsed:8.0f} "
            f"events/s; lost {lost}, duplicated {dup}"
        )
    ratio = (many[1] / many[0]) / (single[1] / single[0])
    verdict = "PASS" if ratio >= 0.5 and many[2] == many[3] == 0 else "MISS"
    lines.append(f"P7 4 processes / 1 process throughput: {ratio:.2f} (target >= 0.50) {verdict}")
    return lines


def run_workers(store_url: str, sid: str, workers: int, turns: int) -> tuple[float, int, int, int]:
    go = f"/tmp/agent-host-p7-{secrets.token_hex(4)}"
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", json.dumps([store_url, sid, w, turns, go])],
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    for p in procs:  # each says ready once its store is open
        assert p.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    Path(go).touch()
    for p in procs:
        assert p.wait(300) == 0
    elapsed = time.perf_counter() - start
    os.unlink(go)
    events = asyncio.run(_read(store_url, sid))
    tags = [e.text for e in events if hasattr(e, "text") and e.text.startswith("w")]
    want = {f"w{w}-{t}" for w in range(workers) for t in range(turns)}
    lost = len(want - set(tags))
    dup = len(tags) - len(set(tags))
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "a gap in the seqs"
    return elapsed, len(events), lost, dup


async def _read(store_url: str, sid: str) -> list:
    store = open_store(store_url)
    try:
        return await store.read(sid)
    finally:
        await store.close()


async def worker(store_url: str, sid: str, w: int, turns: int, go: str) -> None:
    store = open_store(store_url)
    await store.head(sid)  # the pool connected
    print("ready", flush=True)
    while not os.path.exists(go):
        await asyncio.sleep(0.001)
    for t in range(turns):
        events = turn_events(t)
        events[0] = UserPrompt(text=f"w{w}-{t}")
        await store.append(sid, events)
    await store.close()


# -- the scale run


async def scale(url: str, iterations: int, small: dict[str, float]) -> list[str]:
    """100,000 sessions of 100 events (10M), plus the 1,000-turn session: first page,
    resume of the 1,000-turn session and an append, against the 10,000-session figures."""
    store_url = url + "?schema=scale"
    store = open_store(store_url)
    t0 = time.perf_counter()
    await bulk_sessions(store_url, "scale", 100_000, events_each=100)
    loaded = time.perf_counter() - t0
    # The load's 2 GB of dirty pages would otherwise be written out by the next
    # checkpoint in the middle of the timed appends, and their commits wait on it.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    for start in range(0, TURNS, 50):
        await store.append("big", [e for i in range(start, start + 50) for e in turn_events(i)])

    async def page(it: int) -> None:
        assert len(await store.list_page(50)) == 50

    async def resume(it: int) -> None:
        assert len(to_messages(timeline(await store.read("big")))) >= 4 * TURNS

    head = {"big": await store.head("big")}

    async def append(it: int) -> None:
        head["big"] = await store.append("big", turn_events(it), head["big"])

    c = [Contender("page", page), Contender("resume", resume), Contender("append", append)]
    await round_robin(c, iterations, warmup=5)
    await store.close()
    lines = [f"scale: 100,000 sessions, 10,000,000 events COPYed in {loaded:.0f}s"]
    for contender, key in zip(c, ("page", "resume", "append"), strict=True):
        median = contender.samples.median * 1e3
        ratio = median / small[key]
        verdict = "PASS" if ratio <= 2 else "MISS"
        lines.append(
            f"scale {key:<7} median {median:8.2f} ms vs {small[key]:8.2f} ms at 10,000 "
            f"sessions: {ratio:.2f}x (target <= 2x) {verdict}"
        )
    return lines


# -- main


async def run(url: str, iterations: int, do_scale: bool, only: set[str]) -> None:
    if "P1" in only:
        rows = await p1(url, iterations)
        print_section("P1: durable append of a 4-event turn", rows)
    if "P2" in only:
        p2_rows = await p2(url, max(10, iterations // 5))
        print_section("P2: resume of 1,000 turns", p2_rows)
    if "P3" in only:
        p3_rows = await p3(url, iterations)
        print_section("P3: list of 10,000 sessions", p3_rows)
    if "P7" in only:
        print()
        for line in await asyncio.to_thread(p7, url, max(25, iterations // 4)):
            print(line)
    if do_scale and {"P1", "P2", "P3"} <= only:
        small = {
            "page": p3_rows[1].samples.median * 1e3,
            "resume": p2_rows[2].samples.median * 1e3,
            "append": rows[0].samples.median * 1e3,
        }
        print()
        for line in await scale(url, max(10, iterations // 10), small):
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--scale", action="store_true")
    parser.add_argument("--only", default="P1,P2,P3,P7", help="e.g. P1,P3")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker(*json.loads(args.worker)))
        return
    name = f"agent_host_bench_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        conn.execute(f'CREATE DATABASE "{name}"')
    print(f"PostgreSQL {version} at {urlsplit(ADMIN).netloc}, database {name}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    try:
        only = set(args.only.upper().split(","))
        asyncio.run(run(database_url(name), 30 if args.quick else 200, args.scale, only))
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
