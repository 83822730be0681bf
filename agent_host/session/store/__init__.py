"""Session stores: pick one with :func:`open_store`."""

from __future__ import annotations

from ..blobs import GcResult, is_blob_id
from ..events import FileSnapshot, UnknownEvent
from .base import Checkpointer, SessionInfo, StoreBase, Truncation, check_session_id
from .file import FileCheckpointer
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


async def collect_garbage(store: Checkpointer, grace_seconds: float = 3600.0) -> GcResult:
    """Remove blobs that no event of any session (truncated ones included) refers to.

    Blobs stored within ``grace_seconds`` are kept whatever happens: a snapshot is
    stored just before the event that refers to it is appended. So are blobs a live
    holder pinned (see blob_pins): a workspace index's, in this process or another.
    """
    from ..capture_log import pinned_blobs

    referenced: set[str] = set()
    for info in await store.list():
        events = await store.read(info.id)
        referenced |= await pinned_blobs(events, store.blobs)  # a crash's unfinished capture
        for truncation in await store.truncations(info.id):
            events.extend(truncation.events)
        for event in events:
            if isinstance(event, FileSnapshot):
                referenced.update(b for b in (event.before, event.after, event.buffer_before) if b)
            elif isinstance(event, UnknownEvent):
                # A newer version's event may refer to blobs under any field name.
                referenced.update(_blob_ids_in(event.data))
    return await store.blobs.gc(referenced, grace_seconds)


def _blob_ids_in(value: object) -> list[str]:
    if is_blob_id(value):
        return [value]  # type: ignore[list-item]
    if isinstance(value, dict):
        return [b for v in value.values() for b in _blob_ids_in(v)]
    if isinstance(value, list):
        return [b for v in value for b in _blob_ids_in(v)]
    return []
