"""Session stores: pick one with :func:`open_store`."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..blobs import GcResult, is_blob_id
from ..errors import UnsupportedStore
from ..events import FileSnapshot, UnknownEvent
from .base import Checkpointer, SessionInfo, Truncation, check_session_id
from .file import FileCheckpointer
from .memory import MemoryCheckpointer

__all__ = [
    "Checkpointer",
    "FileCheckpointer",
    "MemoryCheckpointer",
    "SessionInfo",
    "SqliteCheckpointer",
    "Truncation",
    "check_session_id",
    "collect_garbage",
    "default_store_url",
    "open_store",
]


def __getattr__(name: str) -> object:
    # SQLite is loaded when asked for, keeping sqlite3 out of the server's start-up.
    if name == "SqliteCheckpointer":
        from .sqlite import SqliteCheckpointer

        return SqliteCheckpointer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_store_url() -> str:
    """The file store in the user's data folder (e.g. ~/.local/share/agent-host)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("agent-host", appauthor=False)).as_uri()


def open_store(url: str | os.PathLike[str] | None = None) -> Checkpointer:
    """The store for ``url``: ``file:///dir`` or a plain path, ``sqlite:///x.db``,
    ``sqlite:///:memory:`` (an in-memory database of this store's own), ``memory:``.

    None means :func:`default_store_url`. ``open_store(store.url)`` opens ``store``
    again (a new, empty one for the in-memory stores).
    """
    if url is None:
        url = default_store_url()
    text = os.fspath(url)
    if "://" not in text and not text.startswith("memory:"):
        return FileCheckpointer(text)
    parts = urlsplit(text)
    path = unquote(parts.path)
    if parts.scheme == "memory":
        return MemoryCheckpointer()
    if parts.scheme not in ("file", "sqlite") or parts.netloc not in ("", "localhost"):
        raise UnsupportedStore(
            f"unsupported store URL {text!r}: use file:///path/to/dir, a plain directory "
            "path, sqlite:///path/to/sessions.db or memory:"
        )
    if not path:
        raise UnsupportedStore(f"store URL {text!r} names no path")
    if parts.scheme == "file":
        return FileCheckpointer(path)
    from .sqlite import MEMORY, SqliteCheckpointer

    # As written, not unquoted: sqlite:///%3Amemory%3A is a file named /:memory:.
    if parts.path == f"/{MEMORY}":
        return SqliteCheckpointer(MEMORY)
    return SqliteCheckpointer(path)


async def collect_garbage(store: Checkpointer, grace_seconds: float = 3600.0) -> GcResult:
    """Remove blobs that no event of any session (truncated ones included) refers to.

    Blobs stored within ``grace_seconds`` are kept whatever happens: a snapshot is
    stored just before the event that refers to it is appended.
    """
    referenced: set[str] = set()
    for info in await store.list():
        events = await store.read(info.id)
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
