"""What an :class:`~.host.AgentHost` does to one session, named or its current one:
turns (send, stream, cancel), restore and undo, compaction, checkpoints, and the
OpenAI Agents SDK's ``get_items / add_items / pop_item / clear_session``.

Each call finds the session's handle (:meth:`AgentHost.handle`) and hands the work
to it; the handle queues it behind the session's other operations. What makes and
holds the handles -- the host's store, model, resources and registry -- is host.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .checkpoints import Checkpoint
from .compaction import CompactResult
from .errors import InvalidArgument
from .op_queue import Wait
from .store import check_session_id
from .streaming import UpdateStream
from .turn import TurnResult

if TYPE_CHECKING:
    from .handle import SessionHandle
    from .restore import RestoreResult, UndoResult


class SessionCalls:
    """AgentHost's calls about one session (a mixin: AgentHost supplies the handles)."""

    if TYPE_CHECKING:
        session_id: str
        _handles: dict[str, SessionHandle]

        def handle(self, session_id: str | None = None) -> SessionHandle: ...
        def _sid(self, session_id: str | None) -> str: ...
        def _require_persistence(self, what: str) -> None: ...

    async def history(self, session_id: str | None = None, limit: int | None = None) -> list[dict]:
        """The session as the model sees it, in OpenAI chat format."""
        return await self.handle(session_id).history(limit)

    async def session_cost(self, session_id: str | None = None) -> float | None:
        """Money spent in the session so far (USD); None when a model's cost is unknown."""
        return await self.handle(session_id).session_cost()

    async def list_checkpoints(self, session_id: str | None = None) -> list[Checkpoint]:
        """The prompts to restore to; a command's changes a crash kept from the log
        are logged first (unless a turn holds the session: then they may be a
        command's that is running)."""
        self._require_persistence("list_checkpoints")
        return await self.handle(session_id).list_checkpoints()

    # -- turns

    async def send(
        self,
        prompt: str,
        session_id: str | None = None,
        model: str | None = None,
        context: list[dict[str, Any]] | None = None,
        *,
        wait: Wait = False,
    ) -> TurnResult:
        """Run one turn. A second send to a session with a turn running raises
        TurnInProgress, unless ``wait`` (True: wait its turn; seconds: at most that).

        ``model`` overrides, for this turn, the model the session was started with;
        ``context`` (``{"text", "uri"?}`` each) is logged beside the prompt.
        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidArgument("prompt must be a non-empty string")
        return await self.handle(session_id).send(prompt, model=model, context=context, wait=wait)

    def stream(
        self,
        prompt: str,
        session_id: str | None = None,
        model: str | None = None,
        context: list[dict[str, Any]] | None = None,
        *,
        wait: Wait = False,
    ) -> UpdateStream[TurnResult]:
        """One turn as a stream (see streaming.py): ``async for update in
        host.stream(prompt)`` yields what ``on_event`` is told of the turn, in
        order, and its TurnResult last; leaving early (``aclose()``, ``async
        with``) cancels the turn. ``await`` it for the TurnResult alone."""
        handle = self.handle(session_id)
        return UpdateStream(
            handle.session_id,
            lambda: handle.send(prompt, model=model, context=context, wait=wait),
        )

    async def cancel(self, session_id: str | None = None) -> bool:
        """Cancel the running turn; its send returns with stop_reason "cancelled"."""
        handle = self._handles.get(self._sid(session_id))
        return await handle.cancel() if handle is not None else False

    # -- restore

    async def restore(
        self,
        session_id: str,
        seq: int,
        files: bool = True,
        conversation: bool = True,
        *,
        force: bool = False,
        wait: Wait = False,
    ) -> RestoreResult:
        """Return to the moment just before the prompt at ``seq`` (undoable).

        Files changed since the session last wrote them are left and reported as
        ``conflicts``, unless ``force``."""
        self._require_persistence("restore")
        handle = self.handle(check_session_id(session_id))
        result = await handle.restore(seq, files, conversation, force=force, wait=wait)
        self.session_id = handle.session_id  # as LiteAgent's: the session becomes current
        return result

    async def undo_restore(
        self, session_id: str | None = None, *, force: bool = False, wait: Wait = False
    ) -> UndoResult:
        """Undo the last restore: files and conversation as they were before it.

        Files changed since the restore wrote them are left and reported as
        ``conflicts``, unless ``force``."""
        self._require_persistence("undo_restore")
        handle = self.handle(session_id)
        result = await handle.undo_restore(force=force, wait=wait)
        self.session_id = handle.session_id
        return result

    # -- compaction

    def compact(
        self, instructions: str | None = None, session_id: str | None = None, *, wait: Wait = False
    ) -> UpdateStream[CompactResult]:
        """Summarise the older part of the conversation; atomic if the model fails.
        ``await`` it for the CompactResult (``before``, ``after``: tokens), or
        ``async for`` it: its CompactionProgress (and ModelWait), the result last."""
        self._require_persistence("compact")
        handle = self.handle(session_id)
        return UpdateStream(handle.session_id, lambda: handle.compact(instructions, wait=wait))

    # -- the OpenAI Agents SDK's Session protocol (agent_host.agents wraps it)

    async def get_items(
        self, limit: int | None = None, *, session_id: str | None = None
    ) -> list[dict]:
        """The session's Responses API items, as the SDK's ``SQLiteSession`` returns
        them: the latest ``limit`` (None or negative: all), items the SDK stored
        verbatim, our own turns' events as the items the SDK stores for them."""
        return await self.handle(session_id).get_items(limit)

    async def add_items(
        self, items: list[dict], *, session_id: str | None = None, wait: Wait = False
    ) -> None:
        """Append Responses API items (chat-completions messages are taken too, as the
        Responses items they stand for), all in one atomic append."""
        await self.handle(session_id).add_items(items, wait=wait)

    async def pop_item(self, *, session_id: str | None = None, wait: Wait = False) -> dict | None:
        """Remove and return the latest item, exactly it: the log is cut back to the
        event it came from (the cut stays in the store's truncations)."""
        return await self.handle(session_id).pop_item(wait=wait)

    async def clear_session(self, *, session_id: str | None = None, wait: Wait = False) -> None:
        """Empty the session: its items go (retrievable in the store's truncations);
        it stays listed, with its folder, model and title."""
        await self.handle(session_id).clear(wait=wait)
