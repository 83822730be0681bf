"""The SQLAlchemy store's tables, as SQLAlchemy Core objects, and their migration.

Every table name starts ``agent_host_``: the store often lives in an app's own
database (an engine the app hands over), beside tables of its own called
``sessions`` or ``events``. ``agent_host_schema`` holds one row per applied step;
steps run on first use in one transaction, serialised across processes (an
advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite, a named lock on
MySQL/MariaDB, whose DDL commits as it goes). Append only: a released step is never
edited; a database newer than this version is refused.

On MySQL and MariaDB a TEXT column cannot be a key and its collation folds case and
trailing spaces, so the key columns (session ids, blob ids, pin holders) are
VARBINARY there, holding the UTF-8 bytes: ids compare and sort byte for byte, as on
SQLite and PostgreSQL. Events and blobs are LONGBLOB (a BLOB holds only 64 KiB).
"""

from __future__ import annotations

import hashlib
from typing import Any

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
    TypeDecorator,
    func,
    insert,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects.mysql import LONGBLOB, LONGTEXT, VARBINARY
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from ..errors import StoreUnavailable
from .ids import MAX_ID_BYTES

MYSQL = ("mysql", "mariadb")
"""SQLAlchemy's dialect names for MySQL and MariaDB (``mariadb+aiomysql://``)."""

Blob = LargeBinary().with_variant(LONGBLOB(), *MYSQL)
Prose = Text().with_variant(LONGTEXT(), *MYSQL)


class Key(TypeDecorator[str]):
    """A string key: TEXT, or on MySQL/MariaDB VARBINARY holding its UTF-8 bytes."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name in MYSQL:
            return dialect.type_descriptor(VARBINARY(MAX_ID_BYTES))
        return dialect.type_descriptor(Text())

    def process_bind_param(self, value: str | None, dialect: Dialect) -> Any:
        if value is not None and dialect.name in MYSQL:
            return value.encode()
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        if isinstance(value, bytes | bytearray):
            return bytes(value).decode()
        return value


_MYSQL_TABLE: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


class Tables:
    """The store's tables in ``schema`` (None: the connection's default)."""

    def __init__(self, schema: str | None) -> None:
        self.schema = schema
        self.metadata = m = MetaData(schema=schema)
        self.version = Table(
            "agent_host_schema",
            m,
            Column("version", Integer, primary_key=True),
            **_MYSQL_TABLE,
        )
        self.sessions = Table(
            "agent_host_sessions",
            m,
            Column("id", Key, primary_key=True),
            Column("created_at", Double, nullable=False),
            Column("updated_at", Double, nullable=False),
            Column("head", BigInteger, nullable=False),
            Column("turns", Integer, nullable=False),
            Column("title", Prose, nullable=False),
            Column("workspace", Prose, nullable=False),
            **_MYSQL_TABLE,
        )
        Index("agent_host_sessions_newest", self.sessions.c.updated_at, self.sessions.c.id)
        self.events = Table(
            "agent_host_events",
            m,
            Column("session_id", Key, primary_key=True),
            Column("seq", BigInteger, primary_key=True, autoincrement=False),
            Column("data", Blob, nullable=False),
            **_MYSQL_TABLE,
        )
        self.truncations = Table(
            "agent_host_truncations",
            m,
            Column("session_id", Key, primary_key=True),
            Column("id", Integer, primary_key=True, autoincrement=False),
            Column("seq", BigInteger, nullable=False),
            Column("ts", Double, nullable=False),
            Column("events", Blob, nullable=False),
            **_MYSQL_TABLE,
        )
        self.blobs = Table(
            "agent_host_blobs",
            m,
            Column("id", Key, primary_key=True),
            Column("data", Blob, nullable=False),
            Column("touched_at", Double, nullable=False),
            **_MYSQL_TABLE,
        )
        # Pins (session.blob_pins) of holders gc cannot watch (another host): each
        # pin pushes its holder's expiry on. A holder's row with blob_id '' marks it.
        self.pins = Table(
            "agent_host_blob_pins",
            m,
            Column("holder", Key, primary_key=True),
            Column("blob_id", Key, primary_key=True),
            Column("expires_at", Double, nullable=False),
            **_MYSQL_TABLE,
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


def lock_name(*parts: str) -> str:
    """A stable MySQL/MariaDB ``GET_LOCK`` name for ``parts`` (at most 64 characters;
    the server's, not the database's: callers name the database among ``parts``)."""
    digest = hashlib.sha256("\0".join(("agent-host-sqla", *parts)).encode()).hexdigest()
    return f"agent_host_{digest[:48]}"


MIGRATION_WAIT = 60
"""Seconds a MySQL/MariaDB migration waits for another process's to finish."""


async def migrate(conn: AsyncConnection, t: Tables, create: bool, where: str) -> None:
    """Bring the tables up to date in ``conn``'s transaction (begun by the caller,
    ``BEGIN IMMEDIATE`` on SQLite); with ``create`` False, only check they are."""
    dialect = conn.dialect.name
    if dialect in MYSQL:
        # DDL commits at once there: a named lock, held until the version row is
        # committed, keeps a second process from creating the same tables.
        name = lock_name("migrate", conn.engine.url.database or "", t.schema or "")
        got = (
            await conn.execute(text("SELECT GET_LOCK(:n, :w)"), {"n": name, "w": MIGRATION_WAIT})
        ).scalar()
        if got != 1:
            raise StoreUnavailable(
                f"{where}: another process has been creating the agent-host tables for "
                f"{MIGRATION_WAIT}s; try again"
            )
        try:
            await _migrate(conn, t, create, where)
            await conn.commit()
        finally:
            await conn.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": name})
        return
    if dialect == "postgresql":
        key = lock_key("migrate", t.schema or "")
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
        if t.schema and create:
            await conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{t.schema}"'))
    await _migrate(conn, t, create, where)


async def _migrate(conn: AsyncConnection, t: Tables, create: bool, where: str) -> None:
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
