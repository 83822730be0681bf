"""What only the SQLite store promises: WAL, migrations, a unique (session, seq), and
an in-memory database for ``:memory:``."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

import pytest

from agent_host.session import SqliteCheckpointer, open_store
from agent_host.session.errors import TurnInProgress
from agent_host.session.events import UserPrompt
from agent_host.session.store.sqlite import MIGRATIONS


async def test_database_is_wal_private_and_migrated(tmp_path):
    path = tmp_path / "s.db"
    store = open_store(f"sqlite://{path}")
    assert isinstance(store, SqliteCheckpointer)
    await store.append("s1", [UserPrompt(text="x")])
    await store.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


async def test_a_version_1_database_gets_each_sessions_workspace(tmp_path):
    """Migration 2 adds sessions.workspace, filled from each log's session_started."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute("PRAGMA user_version = 1")
    rows = [
        ("s1", 1, b'{"type":"session_started","workspace":"/src/app","seq":1,"ts":1.0}'),
        ("s1", 2, b'{"type":"user_prompt","text":"hi","seq":2,"ts":2.0}'),
        ("s2", 1, b'{"type":"user_prompt","text":"no start","seq":1,"ts":3.0}'),
    ]
    db.executemany("INSERT INTO events VALUES (?, ?, ?)", rows)
    db.executemany(
        "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
        [("s1", 1.0, 2.0, 2, 1, "hi"), ("s2", 3.0, 3.0, 1, 1, "no start")],
    )
    db.commit()
    db.close()
    store = SqliteCheckpointer(path)
    assert {i.id: i.workspace for i in await store.list()} == {"s1": "/src/app", "s2": ""}
    await store.append("s2", [UserPrompt(text="more")])
    assert {i.id: i.head for i in await store.list()} == {"s1": 2, "s2": 2}
    await store.close()


async def test_reopening_does_not_migrate_again(tmp_path):
    path = tmp_path / "s.db"
    store = SqliteCheckpointer(path)
    await store.append("s1", [UserPrompt(text="x")])
    await store.close()
    again = SqliteCheckpointer(path)
    assert [e.text for e in await again.read("s1")] == ["x"]


async def test_a_second_event_with_the_same_seq_is_impossible(tmp_path):
    path = tmp_path / "s.db"
    store = SqliteCheckpointer(path)
    await store.append("s1", [UserPrompt(text="x")])
    db = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO events (session_id, seq, data) VALUES ('s1', 1, x'7b7d')")


# -- the in-memory database


@pytest.fixture
def no_files(tmp_path, monkeypatch):
    """Run in an empty folder, then check nothing was written there or at /:memory:
    (where a relative ":memory:" resolved against / would be created)."""
    root_file = Path("/:memory:")
    before = root_file.stat().st_mtime_ns if root_file.exists() else None
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    yield
    assert list(here.iterdir()) == []
    assert (root_file.stat().st_mtime_ns if root_file.exists() else None) == before


@pytest.mark.parametrize("opener", ["url", "class"])
async def test_memory_is_a_database_of_its_own_with_no_file(no_files, opener):
    def new():
        if opener == "url":
            return open_store("sqlite:///:memory:")
        return SqliteCheckpointer(":memory:")

    a, b = new(), new()
    assert isinstance(a, SqliteCheckpointer) and a.path is None
    assert a.url == "sqlite:///:memory:" and repr(a) == "SqliteCheckpointer(':memory:')"
    await a.append("s1", [UserPrompt(text="only in a")])
    blob = await a.blobs.put(b"snapshot")
    assert [i.id for i in await a.list()] == ["s1"]
    assert await a.blobs.get(blob) == b"snapshot"
    assert await b.list() == [] and not await b.blobs.exists(blob)
    async with a.turn_lease("s1"), b.turn_lease("s1"):  # leases are per store too
        pass
    await a.close()
    await b.close()


async def test_memory_is_shared_by_the_stores_threads_and_event_loops(no_files):
    store = SqliteCheckpointer(":memory:")
    # Each call runs on a worker thread; these run at once.
    heads = await asyncio.gather(
        *(store.append(f"s{n}", [UserPrompt(text="x")]) for n in range(20))
    )
    assert heads == [1] * 20

    def in_another_loop() -> list[str]:
        async def read() -> list[str]:
            await store.append("s0", [UserPrompt(text="from a thread")], expected_head=1)
            return [e.text for e in await store.read("s0")]

        return asyncio.run(read())

    assert await asyncio.to_thread(in_another_loop) == ["x", "from a thread"]
    assert len(await store.list()) == 20
    await store.close()


async def test_memory_lease_is_exclusive_within_the_process(no_files):
    store = open_store("sqlite:///:memory:")
    async with store.turn_lease("s1"):
        with pytest.raises(TurnInProgress, match="'s1'"):
            async with store.turn_lease("s1"):
                pass
    async with store.turn_lease("s1"):
        pass
    await store.close()


async def test_a_file_named_like_memory_is_a_file(tmp_path, monkeypatch):
    """Only ":memory:" itself is the in-memory database; a path merely ending so, or the
    name quoted in a URL, is a file."""
    monkeypatch.chdir(tmp_path)
    store = SqliteCheckpointer(tmp_path / "x:memory:")
    await store.append("s1", [UserPrompt(text="x")])
    await store.close()
    assert (tmp_path / "x:memory:").is_file()
    quoted = open_store(f"sqlite://{quote(str(tmp_path))}/%3Amemory%3A")
    assert quoted.path == tmp_path / ":memory:"
    await quoted.close()
    again = open_store(quoted.url)
    assert again.path == tmp_path / ":memory:"
    await again.close()
