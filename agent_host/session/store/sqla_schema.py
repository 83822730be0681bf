"""The SQLAlchemy store's tables, as SQLAlchemy Core objects, and their migration.

Every table name starts ``agent_host_``: the store often lives in an app's own
database (an engine the app hands over), beside tables of its own called
``sessions`` or ``events``. ``agent_host_schema`` holds one row per applied step;
steps run on first use in one transaction, serialised across processes (an
advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite). Append only: a released
step is never edited; a database newer than this version is refused.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    func,
    insert,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from ..errors import StoreUnavailable


class Tables:
    """The store's tables in ``schema`` (None: the connection's default)."""

    def __init__(self, schema: str | None) -> None:
        self.schema = schema
        self.metadata = m = MetaData(schema=schema)
        self.version = Table("agent_host_schema", m, Column("version", Integer, primary_key=True))
        self.sessions = Table(
            "agent_host_sessions",
            m,
            Column("id", Text, primary_key=True),
            Column("created_at", Double, nullable=False),
            Column("updated_at", Double, nullable=False),
            Column("head", BigInteger, nullable=False),
            Column("turns", Integer, nullable=False),
            Column("title", Text, nullable=False),
            Column("workspace", Text, nullable=False),
        )
        Index("agent_host_sessions_newest", self.sessions.c.updated_at, self.sessions.c.id)
        self.events = Table(
            "agent_host_events",
            m,
            Column("session_id", Text, primary_key=True),
            Column("seq", BigInteger, primary_key=True, autoincrement=False),
            Column("data", LargeBinary, nullable=False),
        )
        self.truncations = Table(
            "agent_host_truncations",
            m,
            Column("session_id", Text, primary_key=True),
            Column("id", Integer, primary_key=True, autoincrement=False),
            Column("seq", BigInteger, nullable=False),
            Column("ts", Double, nullable=False),
            Column("events", LargeBinary, nullable=False),
        )
        self.blobs = Table(
            "agent_host_blobs",
            m,
            Column("id", Text, primary_key=True),
            Column("data", LargeBinary, nullable=False),
            Column("touched_at", Double, nullable=False),
        )
        # Pins (session.blob_pins) of holders gc cannot watch (another host): each
        # pin pushes its holder's expiry on. A holder's row with blob_id '' marks it.
        self.pins = Table(
            "agent_host_blob_pins",
            m,
            Column("holder", Text, primary_key=True),
            Column("blob_id", Text, primary_key=True),
            Column("expires_at", Double, nullable=False),
        )
        # Append only: each step is the tables it creates.
        self.migrations: list[list[Table]] = [
            [self.sessions, self.events, self.truncations, self.blobs, self.pins],
        ]


def _in(conn: Connection, t: Tables) -> str | None:
    """The schema the tables are in: the app's engine may move them
    (``execution_options(schema_translate_map=...)``)."""
    translate = conn.get_execution_options().get("schema_translate_map") or {}
    return translate.get(t.schema, t.schema)


def lock_key(*parts: str) -> int:
    """A stable signed 64-bit advisory lock key for ``parts``."""
    digest = hashlib.sha256("\0".join(("agent-host-sqla", *parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def migrate(conn: AsyncConnection, t: Tables, create: bool, where: str) -> None:
    """Bring the tables up to date in ``conn``'s transaction (begun by the caller,
    ``BEGIN IMMEDIATE`` on SQLite); with ``create`` False, only check they are."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        key = lock_key("migrate", t.schema or "")
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
        if t.schema and create:
            await conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{t.schema}"'))
    # An app's engine may move the tables (execution_options(schema_translate_map)).
    exists = await conn.run_sync(lambda c: inspect(c).has_table(t.version.name, schema=_in(c, t)))
    version = 0
    if exists:
        version = (
            await conn.execute(select(func.coalesce(func.max(t.version.c.version), 0)))
        ).scalar_one()
    wanted = len(t.migrations)
    if version > wanted:
        raise StoreUnavailable(
            f"{where}: its agent-host tables are at version {version}, newer than this "
            f"agent-host knows ({wanted}); upgrade agent-host"
        )
    if version == wanted:
        return
    if not create:
        raise StoreUnavailable(
            f"{where}: the agent-host tables are missing or at version {version} of "
            f"{wanted}; open it with create_tables=True to create or migrate them"
        )
    if not exists:
        await conn.run_sync(lambda c: t.version.create(c))
    for number, step in enumerate(t.migrations[version:], version + 1):
        for table in step:
            await conn.run_sync(table.create)
        await conn.execute(insert(t.version).values(version=number))
