"""A gc that packs versions as deltas, killed before each of its durable steps (file
store: every fsync, rename, replace, unlink and folder removal; SQLite: every
commit; PostgreSQL: every commit and every statement outside a transaction, see
crash_points._count_postgres -- the reads' commits, then the collection's one
transaction, deletes and deltas together), one run per step: every blob a kept
session refers to reads back byte for byte after the kill, and a gc run again
completes, leaves no stray and packs.

The file and SQLite cases each copy a store built once; a PostgreSQL one is built
again in a schema of its own in the run's database, dropped after the case."""

from __future__ import annotations

import asyncio
import secrets
import shutil

import pytest

from agent_host.session import collect_garbage, open_store
from agent_host.session.events import FileSnapshot, UserPrompt
from agent_host.session.store.conformance_deltas import file_versions, store_versions

from .crash_points import _count_postgres, _CountedConnection, _Counter, every_step, killed_at

KEPT = {f"f{n}.py": file_versions(8, seed=n) for n in range(2)}
NEW = {f"n{n}.py": file_versions(1, seed=20 + n) for n in range(2)}
"""Files a turn created: one version each, no pair to pack, so gc copies them out of
the batch they were put in before it retires it."""
GONE = file_versions(6, seed=9)


def _url(root, kind: str) -> str:
    return str(root / "store") if kind == "file" else f"sqlite://{root}/s.db"


async def _build(url: str) -> dict[str, list[str]]:
    """A store where a gc has work of every kind: a packed session to drop (its
    pack entries), versions to pack from loose files and from batches, loose copies
    and batches to remove."""
    store = open_store(url)
    await store_versions(store, "gone", "g.py", GONE)  # one batch
    ids = {"f0.py": await store_versions(store, "kept", "f0.py", KEPT["f0.py"])}
    await collect_garbage(store, grace_seconds=0)  # packs "gone" and f0.py
    await store.delete("gone")
    loose = KEPT["f1.py"][:4]  # put one by one: loose files
    for data in loose:
        await store.blobs.put(data)
    ids["f1.py"] = await store_versions(store, "kept", "f1.py", KEPT["f1.py"])
    created = await store.blobs.put_many([datas[0] for datas in NEW.values()])  # a batch
    await store.append(
        "kept",
        [
            *[UserPrompt(text="create")],
            *[
                FileSnapshot(path=p, before=None, after=b)
                for p, b in zip(NEW, created, strict=True)
            ],
        ],
    )
    ids.update({p: [b] for p, b in zip(NEW, created, strict=True)})
    for n in range(3):  # loose files no event names: dropped
        await store.blobs.put(b"never referenced %d" % n)
    await store.blobs.put_many([b"nor these %d" % n for n in range(3)])  # a batch
    await store.close()
    return ids


def _gc(url: str, kind: str, counter: _Counter) -> None:
    """The gc, in the child killed_at forks (its SQLite or PostgreSQL commits counted
    too; the store opened, so its schema's migration checked, before counting)."""

    async def gc() -> None:
        store = open_store(url)
        if kind == "sqlite":
            store._conn = _CountedConnection(store._conn, counter)
            store.blobs._PACK_BATCH = 3  # several batches, each its own commit
        if kind == "postgres":
            _count_postgres(counter)
        await collect_garbage(store, grace_seconds=0)

    asyncio.run(gc())


async def _all_read_back(url: str, ids: dict[str, list[str]]) -> int:
    """Check every kept version; how many are deltas."""
    store = open_store(url)
    try:
        every = [b for blobs in ids.values() for b in blobs]
        for path, blobs in ids.items():
            for blob, data in zip(blobs, {**KEPT, **NEW}[path], strict=True):
                assert await store.blobs.get(blob) == data
        kept, bad = await store.blobs.read_checked(every, keep_bytes=1 << 30)
        assert bad == {} and len(kept) == len(every)
        return len(await store.blobs.delta_bases(every))
    finally:
        await store.close()


@pytest.mark.parametrize("kind", ["file", "sqlite", "postgres"])
def test_a_packing_gc_killed_at_every_durable_step_loses_nothing(tmp_path, request, kind):
    if kind == "postgres":
        database = request.getfixturevalue("pg_database").create()
    else:
        template = tmp_path / "template"
        template.mkdir()
        ids = asyncio.run(_build(_url(template, kind)))

    def run_case(k: int) -> tuple[bool, int]:
        if kind == "postgres":
            schema = f"gc_crash_{k}_{secrets.token_hex(3)}"
            url = f"{database}?schema={schema}"
        else:
            case = tmp_path / f"case-{k}"
            shutil.copytree(template, case, symlinks=True)
            url = _url(case, kind)
        try:
            case_ids = asyncio.run(_build(url)) if kind == "postgres" else ids
            killed, steps = killed_at(k, lambda c: _gc(url, kind, c), extra_steps=("rmdir",))
            asyncio.run(_all_read_back(url, case_ids))
            asyncio.run(collect_garbage_again(url))
            assert asyncio.run(_all_read_back(url, case_ids)) >= 2 * (8 - 1)
            if kind == "file":
                assert not list(case.rglob(".tmp-*"))
        finally:
            if kind == "postgres":
                _drop_schema(database, schema)
            else:
                shutil.rmtree(case)
        return killed, steps

    # file: loose files and pack entries dropped, packs written, batches retired,
    # loose copies removed; sqlite: the collection, three batches of deltas, the
    # gc cache; postgres: the commits of the list, of the kept session's
    # truncations and of its log's read, and the collection's.
    steps = every_step(run_case)
    assert steps >= {"file": 20, "sqlite": 5, "postgres": 4}[kind], steps


def _drop_schema(database: str, schema: str) -> None:
    """A case's schema gone (its killed child's backend, if still rolling back,
    waited for: its locks)."""
    import psycopg

    with psycopg.connect(database, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def collect_garbage_again(url: str) -> None:
    store = open_store(url)
    await collect_garbage(store, grace_seconds=0)
    await store.close()
