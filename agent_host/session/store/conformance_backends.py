"""The backends the checkpointer contract runs on (see conformance), and what the
checks share.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from agent_host.session import (
    open_store,
)
from agent_host.session.events import (
    AssistantMessage,
    ToolCall,
    ToolResult,
    UserPrompt,
)
from agent_host.session.store.base import Checkpointer


@attrs.define
class Backend:
    """One store backend under test.

    ``url`` opens the same store from another process (None for the stores that
    live in one); ``open()`` opens it again in this process, as a restarted server
    would (the in-memory stores give back their one instance).
    """

    name: str
    url: str | None
    open: Callable[[], Checkpointer]
    opened: list[Checkpointer] = attrs.field(factory=list)
    """Every store ``open()`` made, for :meth:`close_all` at the test's end."""

    @property
    def durable(self) -> bool:
        return self.url is not None

    async def close_all(self) -> None:
        """Close what the test opened and left open (a server store holds connections)."""
        while self.opened:
            await self.opened.pop().close()


def by_url(name: str, url: str) -> Backend:
    def opening() -> Checkpointer:
        store = open_store(url)
        backend.opened.append(store)
        return store

    backend = Backend(name, url, opening)
    return backend


def one_instance(name: str, url: str) -> Backend:
    only = open_store(url)
    return Backend(name, None, lambda: only)


FACTORIES: dict[str, Callable[[Path], Backend]] = {
    "file": lambda tmp: by_url("file", (tmp / "store").as_uri()),
    "sqlite": lambda tmp: by_url("sqlite", f"sqlite://{tmp / 'store.db'}"),
    "memory": lambda tmp: one_instance("memory", "memory:"),
    # The SQLite code on no file: like memory, one instance stands for the store.
    "sqlite-memory": lambda tmp: one_instance("sqlite-memory", "sqlite:///:memory:"),
    # The SQLAlchemy store (pip install 'agent-host[sqlalchemy]') on aiosqlite.
    # SQLAlchemy's URLs: four slashes before an absolute path.
    "sqla-sqlite": lambda tmp: by_url("sqla-sqlite", f"sqlite+aiosqlite:///{tmp / 'store.db'}"),
    "sqla-sqlite-memory": lambda tmp: one_instance(
        "sqla-sqlite-memory", "sqlite+aiosqlite:///:memory:"
    ),
}


def required() -> bool:
    """Whether every backend's server must be there (CI)."""
    return bool(os.environ.get("CI")) or os.environ.get("AGENT_HOST_REQUIRE_EDITORS") == "1"


def server_unavailable(message: str) -> None:
    """Skip with ``message``, or fail when the environment requires every server."""
    if required():
        pytest.fail(f"{message} (CI or AGENT_HOST_REQUIRE_EDITORS=1: a server must be there)")
    pytest.skip(message)


def turn(n: int) -> list:
    return [
        UserPrompt(text=f"prompt {n}"),
        ToolCall(call_id=f"c{n}", name="read_file", arguments={"path": "a.py"}),
        ToolResult(call_id=f"c{n}", output="x" * 100),
        AssistantMessage(text=f"answer {n}"),
    ]
