"""P11: 8 concurrent writers on one Agents SDK session, ours beside SQLiteSession.

Eight asyncio tasks each add ``--turns`` turns (4 items, one ``add_items`` call
each) to one session, all at once: ``AgentHostSession`` on an SQLite file (``x.db``,
as the SDK takes it), on the file store, and on the SQLAlchemy store over aiosqlite
and over aiomysql (MariaDB/MySQL at ``AGENT_HOST_BENCH_MYSQL``, default the local
server's ``agent_host_bench_p11`` database, made afresh each run; left out when no
server answers), beside the SDK's ``SQLiteSession`` on a file. Each call waits its
turn (ours: the session's queue, then its turn lease; theirs: a threading lock).
Printed per contender: items/s for the whole run, and the p50/p99 of one call's time
from its start to its return (its wait included); then the throughput ratio ours /
peer. Rounds alternate the contenders' order.

Checks that nothing was lost or duplicated and each writer's order was kept."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import time
from pathlib import Path

from agents import SQLiteSession
from bench_common import default_base, fmt_ms, git_state, load_average, quantile
from bench_store_common import turn_items
from sqlalchemy.engine import make_url

from agent_host.agents import AgentHostSession

WRITERS = 8
MYSQL = os.environ.get(
    "AGENT_HOST_BENCH_MYSQL", "mysql+aiomysql://root@127.0.0.1:3306/agent_host_bench_p11"
)


def fresh_mysql(drop_only: bool = False) -> str | None:
    """The MySQL URL, its database made empty (or dropped); None when no server answers."""
    import pymysql

    url = make_url(MYSQL)
    try:
        with (
            pymysql.connect(
                host=url.host or "127.0.0.1",
                port=url.port or 3306,
                user=url.username or "root",
                password=url.password or "",
                connect_timeout=3,
                autocommit=True,
            ) as conn,
            conn.cursor() as cursor,
        ):
            cursor.execute(f"DROP DATABASE IF EXISTS `{url.database}`")
            if not drop_only:
                cursor.execute(f"CREATE DATABASE `{url.database}` CHARACTER SET utf8mb4")
    except pymysql.Error as exc:
        print(f"no MariaDB/MySQL at {url.render_as_string()}: {exc}")
        return None
    return MYSQL


async def one_run(session, turns: int) -> tuple[float, list[float]]:
    """All writers at once: the run's seconds and every call's."""
    calls: list[float] = []

    async def writer(w: int) -> None:
        for t in range(turns):
            items = turn_items(w * 10_000 + t)
            items[0] = {"role": "user", "content": f"w{w}-{t}"}
            started = time.perf_counter()
            await session.add_items(items)
            calls.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    return time.perf_counter() - started, calls


def check(items: list, turns: int) -> None:
    prompts = [i["content"] for i in items if i.get("role") == "user"]
    assert len(items) == WRITERS * turns * 4 and len(set(prompts)) == len(prompts)
    for w in range(WRITERS):
        mine = [p for p in prompts if p.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{t}" for t in range(turns)], mine


async def contender(name: str, folder: Path, turns: int) -> tuple[float, list[float]]:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if name == "peer SQLiteSession":
        peer = SQLiteSession("s", str(folder / "peer.db"))
        took, calls = await one_run(peer, turns)
        check(await peer.get_items(), turns)
        peer.close()
        return took, calls
    if name == "ours, sqla sqlite":
        store = f"sqlite+aiosqlite:///{folder / 'ours-sqla.db'}"
    elif name == "ours, sqla mariadb":
        store = fresh_mysql() or ""
    elif name == "ours, sqlite file":
        store = str(folder / "ours.db")
    else:
        store = str(folder / "store")
    ours = AgentHostSession("s", store, workdir=folder, wait=None)
    took, calls = await one_run(ours, turns)
    check(await ours.get_items(), turns)
    await ours.close()
    return took, calls


async def run(base: Path, turns: int, rounds: int) -> None:
    names = ["ours, sqlite file", "ours, file store", "ours, sqla sqlite"]
    if fresh_mysql() is not None:
        names.append("ours, sqla mariadb")
    names.append("peer SQLiteSession")
    results: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in names}
    await contender(names[0], base / "warm", 2)  # imports, first connections
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            took, calls = await contender(name, base / "run", turns)
            results[name][0].append(took)
            results[name][1].extend(calls)
    items = WRITERS * turns * 4
    peer_rate = items / sorted(results[names[-1]][0])[rounds // 2]
    print(f"{'contender':<22} {'items/s':>9} {'call p50 ms':>12} {'call p99 ms':>12} {'ratio':>7}")
    for name in names:
        runs, calls = results[name]
        rate = items / sorted(runs)[rounds // 2]
        print(
            f"{name:<22} {rate:>9.0f} {fmt_ms(quantile(calls, 0.5)):>12} "
            f"{fmt_ms(quantile(calls, 0.99)):>12} {rate / peer_rate:>6.2f}×"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=25, help="turns per writer per run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = (args.dir or default_base()) / "p11"
    print(f"P11: {WRITERS} writers × {args.turns} turns × {args.rounds} rounds, {git_state()}")
    print(f"load average {load_average()} (start)")
    try:
        asyncio.run(run(base, args.turns, args.rounds))
    finally:
        shutil.rmtree(base, ignore_errors=True)
        fresh_mysql(drop_only=True)
    print(f"load average {load_average()} (end), {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
