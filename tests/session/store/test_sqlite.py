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
