"""Store URL schemes: each names the module that opens it, imported on first use.

A backend joins by :func:`register` (or an entry in ``_BUILTIN``): a scheme, the
module and the opener's name in it, and the extra that installs what the module
imports. A missing library then says which ``pip install`` brings it, instead of
a bare ImportError from deep inside the module.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, unquote, urlsplit

import attrs

from ..errors import UnsupportedStore

if TYPE_CHECKING:
    from .base import Checkpointer


@attrs.frozen
class Scheme:
    module: str
    """The module, imported when a URL of this scheme is first opened."""
    opener: str
    """The name in ``module`` of ``(url, parts) -> Checkpointer``."""
    extra: str | None = None
    """The agent-host extra that installs the module's libraries."""
    example: str = ""


_BUILTIN: dict[str, Scheme] = {
    "file": Scheme("agent_host.session.store.registry", "open_file", None, "file:///path/to/dir"),
    "sqlite": Scheme(
        "agent_host.session.store.sqlite", "open_url", None, "sqlite:///path/to/sessions.db"
    ),
    "memory": Scheme("agent_host.session.store.memory", "open_url", None, "memory:"),
    "postgresql": Scheme(
        "agent_host.session.store.postgres", "open_url", "postgres", "postgresql://user@host/db"
    ),
    "postgres": Scheme("agent_host.session.store.postgres", "open_url", "postgres"),
    # SQLAlchemy's async drivers (session/store/sqla.py).
    "sqlite+aiosqlite": Scheme(
        "agent_host.session.store.sqla",
        "open_url",
        "sqlalchemy",
        "sqlite+aiosqlite:////path/to/sessions.db",
    ),
    "postgresql+asyncpg": Scheme(
        "agent_host.session.store.sqla",
        "open_url",
        "sqlalchemy",
        "postgresql+asyncpg://user@host/db",
    ),
    "mysql+aiomysql": Scheme(
        "agent_host.session.store.sqla", "open_url", "sqlalchemy", "mysql+aiomysql://user@host/db"
    ),
    "mariadb+aiomysql": Scheme("agent_host.session.store.sqla", "open_url", "sqlalchemy"),
}
_schemes = dict(_BUILTIN)


def register(scheme: str, entry: Scheme) -> None:
    """Let :func:`open_store` open ``scheme://`` URLs with ``entry``."""
    _schemes[scheme] = entry


def default_store_url() -> str:
    """The file store in the user's data folder (e.g. ~/.local/share/agent-host)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("agent-host", appauthor=False)).as_uri()


def opens_a_store(spec: object) -> bool:
    """Whether :func:`open_store` makes a store of ``spec`` (a URL, a path, None, an
    SQLAlchemy AsyncEngine), rather than ``spec`` being a store object itself."""
    return spec is None or isinstance(spec, str | os.PathLike) or _is_async_engine(spec)


def _is_async_engine(spec: object) -> bool:
    # Told apart without importing SQLAlchemy.
    return type(spec).__name__ == "AsyncEngine" and hasattr(spec, "sync_engine")


SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
"""A plain path ending so names an SQLite file, as the Agents SDK's SQLiteSession
takes it (unless a directory is there already: a file store made before)."""


def open_store(url: str | os.PathLike[str] | None = None) -> Checkpointer:
    """The store for ``url``: ``file:///dir`` or a plain path (one ending in ``.db``,
    ``.sqlite`` or ``.sqlite3``: an SQLite file, unless it is a directory; ``:memory:``:
    SQLite's in-memory database), ``sqlite:///x.db``,
    ``sqlite:///:memory:`` (an in-memory database of this store's own), ``memory:``,
    ``postgresql://user@host/db`` (libpq's URL or environment: ``pip install
    'agent-host[postgres]'``), ``sqlite+aiosqlite:///x.db`` (relative; four slashes: absolute),
    ``postgresql+asyncpg://user@host/db`` or ``mysql+aiomysql://user@host/db``
    (``mariadb+aiomysql://`` too; ``pip install 'agent-host[sqlalchemy]'``),
    or an SQLAlchemy AsyncEngine (the app's own: left open by the store's close).

    None means :func:`default_store_url`. ``open_store(store.url)`` opens ``store``
    again (a new, empty one for the in-memory stores).
    """
    if url is None:
        url = default_store_url()
    if _is_async_engine(url):  # an app's engine
        from .sqla import open_engine

        return open_engine(url)  # type: ignore[arg-type]
    text = os.fspath(url)
    if "://" not in text and not text.startswith("memory:"):
        if text == ":memory:" or (
            text.lower().endswith(SQLITE_SUFFIXES) and not os.path.isdir(text)
        ):
            from .sqlite import SqliteCheckpointer

            return SqliteCheckpointer(text)
        from .file import FileCheckpointer

        return FileCheckpointer(text)
    parts = urlsplit(text)
    entry = _schemes.get(parts.scheme)
    if entry is None:
        raise UnsupportedStore(f"unsupported store URL {_shown(text)!r}: use {_examples()}")
    try:
        module = importlib.import_module(entry.module)
    except ImportError as exc:
        if entry.extra is None:
            raise
        raise UnsupportedStore(
            f"store URL {_shown(text)!r} needs {exc.name or 'a library'} that is not "
            f"installed: pip install 'agent-host[{entry.extra}]'"
        ) from exc
    opener: Callable[[str, SplitResult], Checkpointer] = getattr(module, entry.opener)
    return opener(text, parts)


def local_path(text: str, parts: SplitResult) -> str:
    """The path of a ``file:`` or ``sqlite:`` URL, on this host only."""
    if parts.netloc not in ("", "localhost"):
        raise UnsupportedStore(
            f"unsupported store URL {text!r}: {parts.scheme}: stores live on this host "
            f"(no host name); use {_examples()}"
        )
    path = unquote(parts.path)
    if not path:
        raise UnsupportedStore(f"store URL {text!r} names no path")
    return path


def open_file(text: str, parts: SplitResult) -> Checkpointer:
    from .file import FileCheckpointer

    return FileCheckpointer(local_path(text, parts))


def _examples() -> str:
    shown = [e.example for e in _schemes.values() if e.example]
    return ", ".join(shown[:-1]) + f" or {shown[-1]}, or a plain directory path"


def _shown(text: str) -> str:
    """The URL without a password, for messages."""
    parts = urlsplit(text)
    if parts.password is None:
        return text
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()
