"""An OpenAI Agents SDK ``Session`` on any agent-host store.

``AgentHostSession`` answers ``get_items / add_items / pop_item / clear_session``
as the SDK's own ``SQLiteSession`` does for the same calls, item for item, and the
session it keeps is an ordinary agent-host session: listed, checkpointed at each
prompt, restorable, and continued by ``agent-host run --session ID``::

    from agents import Agent, Runner
    from agent_host.agents import AgentHostSession

    session = AgentHostSession("support-42", store="sqlite:///sessions.db")
    result = await Runner.run(Agent(name="helper"), "Hello", session=session)

As the SDK's ``SQLAlchemySession``: ``AgentHostSession(id, engine=engine)`` keeps the
session in the app's own async engine, ``AgentHostSession.from_url(id,
url="postgresql+asyncpg://...", create_tables=True)`` in a new one (``pip install
'agent-host[sqlalchemy]'``; see session/store/sqla.py).
Concurrent calls on one session wait their turn, as ``SQLiteSession``'s do: in
this process and in any other on the same store, at most ``wait`` seconds.

Needs the SDK: ``pip install 'agent-host[agents]'``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

try:
    from agents.memory import SessionABC
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "agent_host.agents needs the OpenAI Agents SDK: pip install 'agent-host[agents]'"
    ) from exc

from .session.errors import InvalidArgument
from .session.host import AgentHost
from .session.op_queue import DEFAULT_WAIT, as_wait
from .session.store import Checkpointer

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

__all__ = ["DEFAULT_WAIT", "AgentHostSession"]


class AgentHostSession(SessionABC):
    """The SDK's Session protocol over an agent-host session.

    ``store`` is a store URL, path or store object: a path ending in ``.db``,
    ``.sqlite`` or ``.sqlite3`` is an SQLite file, as ``SQLiteSession`` takes it,
    another path a file-store folder; none is in memory, as the SDK's default
    (``memory:``: gone with the process). ``wait`` bounds how long a call
    waits for the calls before it on the session, here or in another process (None:
    as long as it takes; 0: TurnInProgress at once). ``host`` shares an existing
    AgentHost instead (its store and workspace), which this session then does not
    close. Other keywords go to the AgentHost it makes (``workdir``, ``model`` ...:
    what a session started here records)."""

    def __init__(
        self,
        session_id: str,
        store: str | os.PathLike[str] | Checkpointer | None = None,
        *,
        host: AgentHost | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        engine: Any = None,
        create_tables: bool = True,
        wait: float | None = DEFAULT_WAIT,
        **options: Any,
    ) -> None:
        if host is not None and (store is not None or options):
            raise InvalidArgument("give either host= or the store and options for a new host")
        self._closes: Checkpointer | None = None
        """A store from_url opened for this session alone."""
        if engine is not None:
            # The SDK's SQLAlchemySession(id, engine=...): the app's AsyncEngine, left
            # open; agent-host's own agent_host_* tables in it (created unless told not).
            if store is not None or host is not None:
                raise InvalidArgument("give either engine= or store= / host=, not both")
            from .session.store.sqla import SqlAlchemyCheckpointer

            store = SqlAlchemyCheckpointer(engine, create_tables=create_tables)
        self.wait = as_wait(wait)
        self._owns_host = host is None
        if host is None:
            host = AgentHost("memory:" if store is None else store, **options)
        self.host = host
        self.session_id = self.host._sid(session_id)
        self.session_settings = (
            session_settings
            if session_settings is None or isinstance(session_settings, SessionSettings)
            else SessionSettings(**session_settings)
        )

    @classmethod
    def from_url(
        cls,
        session_id: str,
        *,
        url: str,
        engine_kwargs: dict[str, Any] | None = None,
        create_tables: bool = True,
        **options: Any,
    ) -> AgentHostSession:
        """The SDK's ``SQLAlchemySession.from_url``: a session in a new engine for
        ``url`` (``sqlite+aiosqlite:///x.db``, ``postgresql+asyncpg://user@host/db``),
        disposed of by :meth:`close`; ``engine_kwargs`` go to create_async_engine."""
        from .session.store.sqla import SqlAlchemyCheckpointer

        store = SqlAlchemyCheckpointer.from_url(
            url, create_tables=create_tables, **(engine_kwargs or {})
        )
        session = cls(session_id, store, **options)
        session._closes = store
        return session

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        limit = resolve_session_limit(limit, self.session_settings)
        return await self.host.get_items(limit, session_id=self.session_id)  # type: ignore[return-value]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self.host.add_items(list(items), session_id=self.session_id, wait=self.wait)  # type: ignore[arg-type]

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.host.pop_item(session_id=self.session_id, wait=self.wait)  # type: ignore[return-value]

    async def clear_session(self) -> None:
        await self.host.clear_session(session_id=self.session_id, wait=self.wait)

    async def close(self) -> None:
        """Release the store (when this session opened it); the session stays stored."""
        if self._owns_host:
            await self.host.close()
        if self._closes is not None:
            await self._closes.close()

    async def __aenter__(self) -> AgentHostSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
