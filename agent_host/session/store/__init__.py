"""Session stores: pick one with :func:`open_store`."""

from __future__ import annotations

from .base import Checkpointer, SessionInfo, StoreBase, Truncation, check_session_id
from .file import FileCheckpointer
from .gc import collect_garbage
from .memory import MemoryCheckpointer
from .registry import Scheme, default_store_url, open_store, opens_a_store, register

__all__ = [
    "Checkpointer",
    "FileCheckpointer",
    "MemoryCheckpointer",
    "PostgresCheckpointer",
    "Scheme",
    "SessionInfo",
    "SqliteCheckpointer",
    "StoreBase",
    "Truncation",
    "check_session_id",
    "collect_garbage",
    "default_store_url",
    "open_store",
    "opens_a_store",
    "register",
]


def __getattr__(name: str) -> object:
    # Loaded when asked for, keeping sqlite3 and psycopg out of the server's start-up.
    if name == "SqliteCheckpointer":
        from .sqlite import SqliteCheckpointer

        return SqliteCheckpointer
    if name == "PostgresCheckpointer":
        from .postgres import PostgresCheckpointer

        return PostgresCheckpointer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
