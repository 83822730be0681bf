"""PostgreSQL turn leases that outlive nothing: a holder whose lease connection dies
mid-turn -- killed, timed out, a network blip -- never writes after the next holder,
and the next holder closes the turn it left open before starting its own.

Two hosts here are two AgentHosts in this process, each with its own store and so
its own connections: to the database they are two processes.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from urllib.parse import quote

import psycopg
import pytest

from agent_host.acp.errors import to_request_error
from agent_host.rpc.errors import ErrorCode
from agent_host.server.protocol import error_code
from agent_host.session import events as ev
from agent_host.session.conversation import INTERRUPTED
from agent_host.session.errors import LeaseLost, TurnInProgress
from agent_host.session.host import AgentHost
from agent_host.session.store import postgres_schema
from agent_host.session.store.postgres import PostgresCheckpointer
from agent_host.session.store.postgres_schema import lock_key

from ...pg_server import postgres_backend

SID = "s1"
# A's command waits for the test to let it finish: A is mid-turn for as long as needed.
WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.05; done; echo A ran"
A_STEPS = [
    {"text": "A starts", "tool_calls": [{"name": "run_command", "arguments": {"command": ""}}]},
    {"text": "A finished"},
]
# The scripted model plays the step numbered by the log's assistant messages: after
# A's first one, B plays its second. (B names its model: the session's is A's.)
B_STEPS = [{"text": "never played"}, {"text": "B done"}]


@pytest.fixture
def database(pg_database) -> str:
    return pg_database.create()


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


def script(tmp_path, name: str, steps: list[dict]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


def a_steps(command: str) -> list[dict]:
    steps = json.loads(json.dumps(A_STEPS))
    steps[0]["tool_calls"][0]["arguments"]["command"] = command
    return steps


@asynccontextmanager
async def two_hosts(tmp_path, ws, url: str, a_command: str = WAIT_FOR_GO, a_url: str | None = None):
    a = AgentHost(
        store=a_url or url,
        model=script(tmp_path, "a", a_steps(a_command)),
        workdir=ws,
        auto_compact=None,
    )
    b = AgentHost(store=url, model=script(tmp_path, "b", B_STEPS), workdir=ws, auto_compact=None)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


def lease_holder(database: str, schema: str) -> int | None:
    """The pid of the backend holding session s1's turn lease (an advisory lock on a
    bigint key: its high and low halves are classid and objid)."""
    key = lock_key("turn", schema, SID) & 0xFFFF_FFFF_FFFF_FFFF
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 1",
            (key >> 32, key & 0xFFFF_FFFF),
        ).fetchone()
    return None if row is None else row[0]


def taken_epoch(database: str, schema: str) -> int | None:
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute(f"SELECT epoch FROM {schema}.leases WHERE session_id = %s", (SID,))
        found = row.fetchone()
    return None if found is None else found[0]


async def wait_for(check, what: str, seconds: float = 60):
    for _ in range(int(seconds / 0.05)):
        found = await asyncio.to_thread(check)
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} never happened")


async def kill_lease_backend(database: str, schema: str) -> int:
    """Terminate the backend holding s1's lease (as an operator, a timeout or a dead
    network would end it) and wait until the server has let the lock go."""
    pid = await wait_for(lambda: lease_holder(database, schema), "a lease on s1")
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    await wait_for(lambda: lease_holder(database, schema) != pid, "the lease's backend ending")
    return pid


async def mid_tool(host: AgentHost) -> None:
    """Until A's turn is inside its command (its call is in the log)."""

    async def called() -> bool:
        return any(type(e) is ev.ToolCall for e in await host.store.read(SID))

    for _ in range(1200):
        if await called():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("A's turn never reached its command")


def assert_a_closed_then_b(events: list[ev.Event]) -> None:
    """A's turn, closed as interrupted, then all of B's; nothing of A's after B's first."""
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    prompts = [e for e in events if type(e) is ev.UserPrompt]
    assert [p.text for p in prompts] == ["A's turn", "B's turn"]
    b_first = prompts[1].seq
    a_part, b_part = events[: b_first - 1], events[b_first - 1 :]
    assert type(a_part[-1]) is ev.TurnEnd and a_part[-1].stop_reason == "error"
    (call,) = [e for e in a_part if type(e) is ev.ToolCall]
    (result,) = [e for e in a_part if type(e) is ev.ToolResult]
    assert result.call_id == call.call_id and result.output == INTERRUPTED and result.is_error
    assert [e.text for e in a_part if type(e) is ev.AssistantMessage] == ["A starts"]
    assert [e.text for e in b_part if type(e) is ev.AssistantMessage] == ["B done"]
    assert type(b_part[-1]) is ev.TurnEnd and b_part[-1].stop_reason == "end_turn"
    assert [type(e) for e in b_part].count(ev.TurnEnd) == 1
    assert not any(type(e) is ev.ToolResult for e in b_part)


async def test_a_holder_fenced_off_mid_turn_writes_nothing_after_the_next(tmp_path, ws, database):
    """The issue's scenario, the fence alone: A never looks at its lease connection."""
    url = postgres_backend(database).url
    schema = url.rsplit("schema=", 1)[1]
    async with two_hosts(tmp_path, ws, url) as (a, b):
        a.store._leases.check_seconds = 3600  # A learns of the loss only by writing
        a_turn = asyncio.create_task(a.send("A's turn", session_id=SID))
        await mid_tool(a)
        with pytest.raises(TurnInProgress):
            await b.send("B's turn", session_id=SID, model=b.model)
        await kill_lease_backend(database, schema)
        assert (await b.send("B's turn", session_id=SID, model=b.model)).stop_reason == "end_turn"
        (ws / "go").touch()  # A's command ends; its result is A's next write
        with pytest.raises(LeaseLost) as lost:
            await a_turn
        events = await b.store.read(SID)
    assert_a_closed_then_b(events)
    assert not any("A ran" in getattr(e, "output", "") for e in events)
    assert error_code(lost.value) == ErrorCode.LEASE_LOST == -32013
    assert to_request_error(lost.value).code == -31013  # ACP: ours, outside ACP's range


async def test_a_holder_that_lost_its_lease_stops_its_turn_at_once(tmp_path, ws, database):
    """A watches its lease connection: once it is dead and another host holds the
    lease, A's turn is stopped -- its 120 s command too -- and fails with LeaseLost."""
    url = postgres_backend(database).url
    schema = url.rsplit("schema=", 1)[1]
    async with two_hosts(tmp_path, ws, url, a_command="sleep 120; echo A ran") as (a, b):
        a_turn = asyncio.create_task(a.send("A's turn", session_id=SID))
        await mid_tool(a)
        # A's watchdog waits while B takes the lease: else A could take it back first.
        with a.store._leases._mutex:
            await kill_lease_backend(database, schema)
            assert (
                await b.send("B's turn", session_id=SID, model=b.model)
            ).stop_reason == "end_turn"
        with pytest.raises(LeaseLost, match="lease of session 's1' was lost"):
            await asyncio.wait_for(a_turn, 60)  # the command alone takes 120 s
        events = await b.store.read(SID)
    assert_a_closed_then_b(events)


async def test_a_lease_whose_connection_blips_is_taken_back_by_its_holder(tmp_path, ws, database):
    url = postgres_backend(database).url
    schema = url.rsplit("schema=", 1)[1]
    async with two_hosts(tmp_path, ws, url) as (a, b):
        a_turn = asyncio.create_task(a.send("A's turn", session_id=SID))
        await mid_tool(a)
        killed = await kill_lease_backend(database, schema)
        await wait_for(
            lambda: lease_holder(database, schema) not in (None, killed),
            "A taking its lease back",
        )
        with pytest.raises(TurnInProgress, match=r"in this process \(pid \d+, another AgentHost"):
            await b.send("B's turn", session_id=SID, model=b.model)
        (ws / "go").touch()
        assert (await a_turn).stop_reason == "end_turn"
        events = await b.store.read(SID)
    assert [e.text for e in events if type(e) is ev.UserPrompt] == ["A's turn"]
    assert [type(e) for e in events].count(ev.TurnEnd) == 1
    assert events[-1] == ev.TurnEnd(seq=events[-1].seq, ts=events[-1].ts, stop_reason="end_turn")


async def test_an_idle_session_timeout_does_not_end_a_lease(tmp_path, ws, database):
    """The server ends connections idle past idle_session_timeout (here set for every
    connection of A's); the lease connection opts out, as it idles by design. (Not
    shorter: the pool waits a second, then two, before trying a new connection.)"""
    url = postgres_backend(database).url
    schema = url.rsplit("schema=", 1)[1]
    a_url = url + "&options=" + quote("-c idle_session_timeout=5000")
    async with two_hosts(tmp_path, ws, url, a_url=a_url) as (a, b):
        a.store._leases.check_seconds = 3600  # no round trip keeps it busy
        a_turn = asyncio.create_task(a.send("A's turn", session_id=SID))
        await mid_tool(a)
        holder = lease_holder(database, schema)
        await asyncio.sleep(11)  # idle, twice the timeout
        assert lease_holder(database, schema) == holder
        with pytest.raises(TurnInProgress):
            await b.send("B's turn", session_id=SID, model=b.model)
        (ws / "go").touch()
        assert (await a_turn).stop_reason == "end_turn"


async def test_writes_under_a_lease_taken_since_are_refused(database):
    """Each kind of write a holder makes, fenced in the statement that makes it."""
    backend = postgres_backend(database)
    a, b = backend.open(), backend.open()
    try:
        a._leases.check_seconds = 3600
        async with a.turn_lease(SID):
            await a.append(SID, [ev.UserPrompt(text="A's turn")])
            await a.append(SID, [ev.AssistantMessage(text="A's half")], expected_head=1)
            await kill_lease_backend(database, a.schema)
            async with b.turn_lease(SID):
                await b.append(SID, [ev.TurnEnd(stop_reason="error")], expected_head=2)
                writes = {
                    "blind append": lambda: a.append(SID, [ev.AssistantMessage(text="x")]),
                    "append at the head": lambda: a.append(
                        SID, [ev.AssistantMessage(text="x")], expected_head=3
                    ),
                    "append with a restore": lambda: a.append(
                        SID, [ev.Restore(to_seq=1, files=False)], expected_head=3
                    ),
                    "truncate": lambda: a.truncate(SID, 1),
                    "delete": lambda: a.delete(SID),
                }
                for what, write in writes.items():
                    with pytest.raises(LeaseLost, match="was lost"):
                        await write()
                    assert len(await b.read(SID)) == 3, what
                assert await b.append(SID, [ev.UserPrompt(text="B")], expected_head=3) == 4
            # Unfenced writes (no lease held by the writer) are as before.
            assert await b.append(SID, [ev.AssistantMessage(text="free")]) == 5
    finally:
        await backend.close_all()


async def test_a_take_whose_taker_was_cancelled_meanwhile_is_given_back(database):
    backend = postgres_backend(database)
    a, b = backend.open(), backend.open()
    try:
        with a._leases._mutex:  # A's take waits here while its taker is cancelled
            entering = asyncio.ensure_future(a.turn_lease(SID).__aenter__())
            await asyncio.sleep(0.2)
            entering.cancel()
            with pytest.raises(asyncio.CancelledError):
                await entering
        await wait_for(lambda: taken_epoch(database, a.schema) is not None, "A's take")
        await wait_for(lambda: lease_holder(database, a.schema) is None, "A giving it back")
        async with b.turn_lease(SID):
            pass
    finally:
        await backend.close_all()


def old_host_append(database: str, schema: str, head: int, text: str) -> None:
    """An append as agent-host with schema version 3 makes it (append_batch of step 2)."""
    rest = b',"ts":1.0,"type":"assistant_message","text":"' + text.encode() + b'"}'
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(
            f"SELECT {schema}.append_batch(%s, %s, ARRAY[%s]::bytea[], 1.0, 0, NULL, '', "
            "NULL, 'c', 'o')",
            (SID, head, rest),
        )


async def test_a_version_3_schema_upgrades_and_its_sessions_carry_on(database, monkeypatch):
    url = postgres_backend(database).url
    schema = url.rsplit("schema=", 1)[1]
    with monkeypatch.context() as old:
        old.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:3])
        await PostgresCheckpointer(url).close()
    old_host_append(database, schema, 0, "from v3")
    store = PostgresCheckpointer(url)
    try:
        with psycopg.connect(database, autocommit=True) as conn:
            versions = conn.execute(f"SELECT version FROM {schema}.schema_version").fetchall()
        assert versions == [(n,) for n in range(1, len(postgres_schema.MIGRATIONS) + 1)]
        assert [e.text for e in await store.read(SID)] == ["from v3"]
        async with store.turn_lease(SID):
            assert await store.append(SID, [ev.TurnEnd(stop_reason="end_turn")], 1) == 2
        # A host still running version 3's code (started before the upgrade) appends.
        old_host_append(database, schema, 2, "old host")
        assert [e.text for e in (await store.read(SID))[2:]] == ["old host"]
    finally:
        await store.close()
