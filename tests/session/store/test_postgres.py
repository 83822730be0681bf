"""What only the PostgreSQL store does: its URL, migrations, errors a user can act
on, connections the server kills, leases and news across processes."""

from __future__ import annotations

import asyncio
import threading
import time

import psycopg
import pytest

from agent_host.session import open_store
from agent_host.session.errors import StoreUnavailable, TurnInProgress, UnsupportedStore
from agent_host.session.events import AssistantMessage, UserPrompt
from agent_host.session.store.postgres import PostgresCheckpointer
from agent_host.session.store.postgres_schema import MIGRATIONS

from ...pg_server import postgres_backend


@pytest.fixture
def database(pg_database) -> str:
    return pg_database.create()


@pytest.fixture
async def store(database):
    backend = postgres_backend(database)
    s = backend.open()
    yield s
    await backend.close_all()


def admin(database: str) -> psycopg.Connection:
    return psycopg.connect(database, autocommit=True)


def test_the_url_keeps_no_password_and_takes_a_schema(database):
    with_password = database.replace("postgres@", "postgres:s3cret@") + "?schema=pw_test"
    store = open_store(with_password)
    try:
        assert isinstance(store, PostgresCheckpointer)
        assert "s3cret" not in store.url and "s3cret" not in repr(store)
        assert store.schema == "pw_test" and store.url.endswith("?schema=pw_test")
    finally:
        asyncio.run(store.close())
    alias = open_store(database.replace("postgresql://", "postgres://") + "?schema=pw_test")
    assert alias.schema == "pw_test"
    asyncio.run(alias.close())
    with pytest.raises(UnsupportedStore, match="schema"):
        open_store(database + "?schema=Bad-Name")


def test_migrations_run_once_and_a_newer_schema_is_refused(database):
    url = database + "?schema=mig_test"
    stores: list = []
    threads = [threading.Thread(target=lambda: stores.append(open_store(url))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stores) == 4  # four stores migrating at once: none failed
    with admin(database) as conn:
        rows = conn.execute("SELECT version FROM mig_test.schema_version").fetchall()
        assert rows == [(n,) for n in range(1, len(MIGRATIONS) + 1)]
        conn.execute("INSERT INTO mig_test.schema_version (version) VALUES (99)")
    with pytest.raises(StoreUnavailable, match="version 99, newer .* upgrade agent-host"):
        open_store(url)
    for s in stores:
        asyncio.run(s.close())


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda u: u.replace("127.0.0.1:5432", "127.0.0.1:1"), "not running or not reachable"),
        (
            lambda u: u.rsplit("/", 1)[0] + "/agent_host_no_such_db",
            "createdb agent_host_no_such_db",
        ),
        (lambda u: u.replace("postgres@", "no_such_role_x@"), "create the role"),
        (lambda u: u.replace("127.0.0.1", "no-such-host.invalid"), "does not resolve"),
    ],
    ids=["server down", "missing database", "unknown user", "unknown host"],
)
def test_errors_say_what_to_fix(database, change, says):
    url = change(database)
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url)
    assert says in str(caught.value)
    assert "cannot connect to postgresql://" in str(caught.value)


def backend_pids(database: str, schema_hint: str = "") -> set[int]:
    with admin(database) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchall()
    return {pid for (pid,) in rows}


async def test_a_connection_the_server_kills_between_calls_is_replaced(store, database):
    await store.append("s1", [UserPrompt(text="before")])
    with admin(database) as conn:
        killed = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert killed[0] >= 1
    assert await store.append("s1", [AssistantMessage(text="after")], expected_head=1) == 2
    assert [e.text for e in await store.read("s1")] == ["before", "after"]


async def kill_the_waiting_append(database: str, not_pid: int | None = None) -> int:
    """Terminate the backend waiting on the session's row lock; its pid."""
    with admin(database) as conn:
        for _ in range(200):
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database() AND pid <> %s",
                (not_pid or 0,),
            ).fetchone()
            if row:
                conn.execute("SELECT pg_terminate_backend(%s)", row)
                return row[0]
            await asyncio.sleep(0.05)
    raise AssertionError("no append waited on the row lock")


@pytest.fixture
def row_held(database):
    """Another transaction holds session s1's row: appends to it wait."""
    blocker = psycopg.connect(database)
    yield blocker
    blocker.rollback()
    blocker.close()


def hold_row(blocker: psycopg.Connection, schema: str) -> None:
    blocker.execute(f"SELECT 1 FROM {schema}.sessions WHERE id = 's1' FOR UPDATE")


@pytest.mark.parametrize("known_head", [False, True], ids=["blind", "known head"])
async def test_an_append_whose_connection_is_killed_is_retried_and_lands_once(
    store, database, row_held, known_head
):
    await store.append("s1", [UserPrompt(text="one")])
    hold_row(row_held, store.schema)
    batch = [UserPrompt(text="two"), AssistantMessage(text="three")]
    append = asyncio.ensure_future(store.append("s1", batch, 1 if known_head else None))
    first = await kill_the_waiting_append(database)
    # The store found the append had not landed and tries once more, on a new
    # connection that waits on the row in turn.
    with admin(database) as conn:
        for _ in range(200):
            (waiting,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database() AND pid <> %s",
                (first,),
            ).fetchone()
            if waiting:
                break
            await asyncio.sleep(0.05)
    row_held.rollback()
    assert await append == 3
    assert [e.text for e in await store.read("s1")] == ["one", "two", "three"]
    assert (await store.list())[0].head == 3


@pytest.mark.parametrize("known_head", [False, True], ids=["blind", "known head"])
async def test_an_append_that_loses_its_connection_twice_fails_whole(
    store, database, row_held, known_head
):
    await store.append("s1", [UserPrompt(text="one")])
    hold_row(row_held, store.schema)
    batch = [UserPrompt(text="lost"), AssistantMessage(text="lost too")]
    append = asyncio.ensure_future(store.append("s1", batch, 1 if known_head else None))
    first = await kill_the_waiting_append(database)
    await kill_the_waiting_append(database, not_pid=first)
    with pytest.raises(StoreUnavailable, match="connection to the server was lost"):
        await append
    row_held.rollback()
    assert [e.text for e in await store.read("s1")] == ["one"]
    assert (await store.list())[0].head == 1
    assert await store.append("s1", [AssistantMessage(text="two")], expected_head=1) == 2


async def test_a_lease_dies_with_its_connection(database):
    backend = postgres_backend(database)
    a, b = backend.open(), backend.open()
    try:
        lease = a.turn_lease("s1")
        await lease.__aenter__()
        with pytest.raises(TurnInProgress, match=r"in this process \(pid \d+, another AgentHost"):
            async with b.turn_lease("s1"):
                pass
        with admin(database) as conn:  # the holder's connection dies (its host crashed)
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks "
                "WHERE locktype = 'advisory' AND granted AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            for _ in range(100):  # the backend ends (and lets go) a moment later
                held = conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
                    "database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                ).fetchone()
                if held == (0,):
                    break
                await asyncio.sleep(0.05)
        async with b.turn_lease("s1"):
            pass
        await lease.__aexit__(None, None, None)  # releasing a lock the server dropped
    finally:
        await backend.close_all()


async def test_other_stores_appends_are_announced_and_its_own_are_not(database):
    backend = postgres_backend(database)
    watcher, writer = backend.open(), backend.open()
    heard: list[tuple[str, int]] = []
    got = threading.Event()

    def changed(session_id: str, head: int) -> None:
        heard.append((session_id, head))
        got.set()

    try:
        stop = watcher.on_change(changed)
        assert await asyncio.to_thread(watcher._watcher.listening.wait, 10)
        await watcher.append("mine", [UserPrompt(text="not news to me")])
        await writer.append("s1", [UserPrompt(text="a"), AssistantMessage(text="b")])
        assert await asyncio.to_thread(got.wait, 10)
        got.clear()
        await writer.truncate("s1", 1)
        assert await asyncio.to_thread(got.wait, 10)
        got.clear()
        await writer.delete("s1")
        assert await asyncio.to_thread(got.wait, 10)
        assert heard == [("s1", 2), ("s1", 1), ("s1", 0)]
        stop()
        await writer.append("s2", [UserPrompt(text="after stop")])
        time.sleep(0.5)
        assert ("s2", 1) not in heard
    finally:
        await backend.close_all()


async def test_appends_with_a_known_head_keep_the_summary_the_log_gives(store):
    """Such appends update the summary in SQL (append_batch): it must be what
    folding the log gives, whatever the batches hold."""
    from agent_host.session.events import SessionStarted
    from agent_host.session.store.summary import summarize

    batches = [
        [UserPrompt(text="   "), AssistantMessage(text="a blank prompt: no title yet")],
        [UserPrompt(text="now a title"), AssistantMessage(text="x")],
        [SessionStarted(title="Named later", workspace="/w/one"), UserPrompt(text="y")],
        [UserPrompt(text="keeps the name"), SessionStarted(workspace="/w/two")],
        [SessionStarted(title="  "), UserPrompt(text="after a blank name")],
        [UserPrompt(text="nul \0 in the title")],
    ]
    for n, session_id in enumerate(["s1", "s2"]):
        head = 0
        for batch in batches[n:]:
            head = await store.append(session_id, batch, expected_head=head)
            (info,) = [i for i in await store.list() if i.id == session_id]
            want = summarize(await store.read(session_id)).info(session_id)
            want.title = want.title.replace("\0", "\ufffd")
            assert info == want, batch
