"""What only the SQLite store promises: WAL, migrations, a unique (session, seq)."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from agent_host.session import SqliteCheckpointer, open_store
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
