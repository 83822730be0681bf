"""SessionHandle: one session, held open by the engine.

A handle is opened for a session id in an :class:`~.host.AgentHost` (a folder's
engine: store, model provider, MCP servers, settings) with the workspace the
session acts through -- the client port's view of that folder, for that session.
It owns what is the session's own: its state folded from the log, its queue of
operations and the turn lease, its approval gate, its cost.

Operations that change the session (a turn, restore, undo, compaction, item
edits, delete) run one at a time in arrival order: each takes ``wait`` (False:
TurnInProgress at once when another runs, as always; True: wait its turn; a
number: wait at most that many seconds) and holds the session's slot here, then
its turn lease in the store, which other processes wait for the same way.

The operations that return the session to an earlier moment (restore, revert,
undo) are in handle_restore.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import events as ev
from .approval import Approval, Gate, check_approval
from .checkpoints import (
    Checkpoint,
    NothingToUndo,
    checkpoints,
    last_restore,
    pending_capture,
)
from .compaction import CompactResult, compact_session
from .environment import using_policy
from .errors import (
    CheckpointNotFound,
    InvalidArgument,
    TurnInProgress,
    WorkspaceMismatch,
)
from .handle_restore import RestoreOperations, finish_pending
from .interrupted import close_interrupted_turn
from .items import clear_items, items_to_events, limit_items, pop_last_item, to_items
from .op_queue import OpQueue, Wait, check_wait, remaining
from .resources import McpConfigs
from .sandbox import Sandbox, SandboxPolicy, using_sandbox
from .session_folder import session_files, session_started
from .state import SessionState
from .turn import TokenUsage, TurnResult, TurnSettings, run_turn
from .workspace import Workspace
from .workspace.processes import tracking

if TYPE_CHECKING:
    from .host import AgentHost

log = logging.getLogger(__name__)


class SessionHandle(RestoreOperations):
    def __init__(self, host: AgentHost, session_id: str, workspace: Workspace | None) -> None:
        self.session_id = session_id
        self.host = host
        self._workspace = workspace
        self.cost: float | None = 0.0
        """USD spent in the session (None: unknown, a model had no price); read from
        the log on its first turn or change."""
        self._loaded_cost = False
        self._queue = OpQueue(session_id)
        self._state: SessionState | None = None
        self._gate: Gate | None = None
        self._sandbox: Sandbox | None = None
        self._turn: asyncio.Task[TurnResult] | None = None
        self.opening: ev.SessionStarted | None = None
        """How the log opens at its first write, for a session made but not stored
        yet (a session/new): its folder, model and title."""

    def __repr__(self) -> str:
        return f"SessionHandle({self.session_id!r}, {self.workspace!r})"

    @property
    def busy(self) -> bool:
        """Whether an operation holds the session here."""
        return self._queue.busy

    @property
    def workspace(self) -> Workspace:
        """The session's view of its folder, through its own client (without one
        of its own: the host's, as it is now)."""
        return self._workspace if self._workspace is not None else self.host.workspace

    @property
    def roots(self) -> list[Path]:
        return self.workspace.roots

    @property
    def unstored(self) -> bool:
        """Made here (``opening``) and not written yet: it exists in this process only."""
        return self.opening is not None and (self._state is None or self._state.head == 0)

    def _started(self, model: str | None = None) -> ev.SessionStarted:
        """The first event of this session's log, when a write is its first."""
        if self.opening is not None:
            return self.opening
        return session_started(str(self.roots[0]), model or self.host.model)

    # -- reading

    async def state(self, *, full: bool = True) -> SessionState:
        """The session, brought up to date with what other writers appended.

        Without ``full``, only what a turn needs: resumed from its snapshot, when it
        has one, and its whole log read only when something looks further back."""
        self.host._refuse_if_closed()
        state = self._state
        if state is None:
            state = self._state = SessionState(
                self.host.store, self.session_id, listener=self.host._emit
            )
        await state.refresh(full=full)
        return state

    async def settled(self, *, full: bool = True) -> SessionState:
        """The session, with what a crash interrupted finished: a restore and a
        command's capture. Call it holding the session's turn lease (without it, a
        pending capture may be a turn's command running elsewhere)."""
        state = await self.state(full=full)
        try:
            workspace: Workspace | None = await self.files(state)
        except WorkspaceMismatch as mismatch:
            # Its files are not here to tidy; what needs no files (the
            # conversation, a capture finished from its stored index) goes on.
            log.info("session %s: its files are left as they are: %s", self.session_id, mismatch)
            workspace = None
        await finish_pending(state, workspace)
        return state

    async def files(self, state: SessionState) -> Workspace:
        """The workspace as the session names its files: rooted at the folder it was
        started in (a new session's is this workspace's first root); WorkspaceMismatch
        if that folder is not open here."""
        return await session_files(state, self.workspace, to="continue it", unrecorded=None)

    async def history(self, limit: int | None = None) -> list[dict]:
        """The session as the model sees it, in OpenAI chat format."""
        return await (await self.state(full=False)).history(limit)

    async def session_cost(self) -> float | None:
        """Money spent in the session so far (USD); None when a model's cost is unknown."""
        return (await self.state(full=False)).cost

    async def model(self) -> str:
        """The model the session's next turn uses unless another is named."""
        opened = self.opening.model if self.opening is not None else None
        return (await self.state(full=False)).model or opened or self.host.model

    async def get_items(self, limit: int | None = None) -> list[dict]:
        return limit_items(to_items((await self.state()).timeline), limit)

    async def list_checkpoints(self) -> list[Checkpoint]:
        """The prompts to restore to; a command's changes a crash kept from the log
        are logged first (unless an operation holds the session: then they may be a
        running command's)."""
        state = await self.state()
        if pending_capture(state.latest) is not None and not self.busy:
            try:
                async with self.host.store.turn_lease(self.session_id):
                    state = await self.settled()
            except TurnInProgress:
                pass  # a turn in another process: its capture is its own
        return checkpoints(state.timeline)

    async def rewound_to(self) -> int | None:
        """The checkpoint the session's last change, a restore that can still be
        undone, returned to (its prompt is hidden now); None when it is not one."""
        state = await self.state()
        await state.load()
        try:
            restore, _ = last_restore(state.timeline)
        except NothingToUndo:
            return None
        return restore.to_seq + 1

    # -- settings

    @property
    def gate(self) -> Gate:
        if self._gate is None:
            self._gate = Gate(self.host.approval, self.host._permission)
        return self._gate

    @property
    def approval(self) -> Approval:
        return self.gate.policy

    @approval.setter
    def approval(self, approval: Approval) -> None:
        """The approval policy from the next tool call on (answers the user gave
        "always" are kept)."""
        self.gate.policy = check_approval(approval)

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox the session's commands run in (the host's unless set)."""
        return self._sandbox if self._sandbox is not None else self.host.sandbox

    def set_sandbox(self, policy: SandboxPolicy | str | None) -> None:
        """The session's sandbox from its next command on: a policy, a mode's name
        (the host's policy in that mode), None: the host's again."""
        old, self._sandbox = self._sandbox, None
        if policy is not None:
            self._sandbox = self.host.sandbox.with_policy(policy)
        if old is not None:
            old.close()

    async def use_mcp_servers(self, servers: McpConfigs) -> None:
        """The session's own MCP servers instead of the host's, for the host's
        lifetime; never stored, since their config holds secrets."""
        self.host._refuse_if_closed()
        if self._turn is not None and not self._turn.done():
            raise self._queue.refusal("changing its MCP servers")
        await self.host._resources.use_mcp_servers(self.session_id, servers)

    # -- the operations, one at a time

    def exclusive(self, wait: Wait = False, what: str = "it") -> AbstractAsyncContextManager[None]:
        """Hold the session here and its turn lease in the store (see the module)."""
        return self._exclusive(check_wait(wait), what)

    @asynccontextmanager
    async def _exclusive(self, wait: Wait, what: str) -> AsyncIterator[None]:
        self.host._refuse_if_closed()
        started = time.monotonic()
        async with self._queue.slot(wait, what), self._lease(remaining(wait, started)):
            yield

    def _lease(self, wait: Wait) -> AbstractAsyncContextManager[None]:
        store = self.host.store
        if wait is False:
            return store.turn_lease(self.session_id)
        return store.turn_lease(self.session_id, wait=wait)

    async def resume(self) -> SessionState:
        """The session, ready for its next turn: a restore a crash interrupted is
        finished first, unless another process is working on the session (then
        that one finishes it)."""
        try:
            async with self.host.store.turn_lease(self.session_id):
                state = await self.settled(full=False)
        except TurnInProgress:
            state = await self.state(full=False)
        self.refresh_cost(state)
        return state

    async def send(
        self,
        prompt: str,
        *,
        model: str | None = None,
        context: list[dict[str, Any]] | None = None,
        wait: Wait = False,
    ) -> TurnResult:
        """Run one turn (see AgentHost.send)."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidArgument("prompt must be a non-empty string")
        wait = check_wait(wait)
        self.host._refuse_if_closed()
        started = time.monotonic()
        async with self._queue.slot(wait, "a turn"):
            self.host._refuse_if_closed()
            task = asyncio.create_task(
                self._run(prompt, model, context or None, remaining(wait, started))
            )
            self._turn = task
            try:
                result = await asyncio.shield(task)
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if task.cancelled() and not (me and me.cancelling()):
                    # cancel() landed before the turn began: nothing reached the log.
                    return TurnResult(self.session_id, 0, "cancelled", "", TokenUsage(), 0.0)
                # Our caller was cancelled: cancel the turn, let it close the log, re-raise.
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise
            finally:
                if self._turn is task:
                    self._turn = None
        self.cost = None if self.cost is None or result.cost is None else self.cost + result.cost
        return result

    async def cancel(self) -> bool:
        """Cancel the running turn; its send returns with stop_reason "cancelled"."""
        task = self._turn
        if task is None or task.done():
            return False
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return True

    async def _run(
        self, prompt: str, model: str | None, context: list[dict[str, Any]] | None, wait: Wait
    ) -> TurnResult:
        host = self.host
        state = await self.state(full=False)
        # Refused before anything is logged: a session of a folder not open here.
        workspace = await self.files(state)
        opened = self.opening.model if self.opening is not None else None
        chosen = model if model and model != (state.model or opened) else None
        provider = host._resources.provider(model or state.model or opened or host.model)
        if not self._loaded_cost:
            self.cost = state.cost
            self._loaded_cost = True
        limit = int(host.context_window * host.auto_compact) if host.auto_compact else None
        settings = TurnSettings(
            provider=provider,
            workspace=workspace,
            gate=self.gate,
            system_prompt=host.system_prompt,
            max_turns=host.max_turns,
            prices=host.prices,
            compact_at_tokens=limit,
            compact=lambda: compact_session(state, provider, None, prices=host.prices),
            index=host._resources.index(workspace.roots[0]),
            mcp=host._resources.mcp_servers(self.session_id),
            chosen_model=chosen,
            context=context,
            started=self.opening,
        )
        async with self._lease(wait):
            await finish_pending(state, workspace)
            await close_interrupted_turn(state)
            # Set for this turn's task only: the workspace (whoever made it) and
            # the MCP servers the turn starts read them.
            with (
                using_policy(host.shell_environment),
                tracking(host._processes),
                using_sandbox(self.sandbox, workspace.roots),
            ):
                return await run_turn(state, prompt, settings)

    async def compact(
        self, instructions: str | None = None, *, wait: Wait = False
    ) -> CompactResult:
        """Summarise the older part of the conversation; atomic if the model fails."""
        async with self.exclusive(wait, "a compaction"):
            state = await self.settled()
            provider = self.host._resources.provider(state.model or self.host.model)
            return await compact_session(state, provider, instructions, prices=self.host.prices)

    async def add_items(self, items: list[dict], *, wait: Wait = False) -> None:
        """Append Responses API items, all in one atomic append."""
        wait = check_wait(wait)
        if wait is False and self.busy:
            raise self._queue.refusal("adding items")
        events = items_to_events(items)
        if not events:
            return
        async with self.exclusive(wait, "adding items"):
            state = await self.settled()
            untold = 0
            if state.head == 0:
                events.insert(0, self._started())
                untold = 1 if self.opening is not None else 0  # announced when made
            await state.append(events, untold=untold)

    async def store_opening(self) -> None:
        """Store the session's first event if nothing of it is stored yet, so that
        a State naming it resumes it (an empty session is otherwise never written)."""
        if (await self.state(full=False)).head:
            return
        async with self.exclusive(False, "storing it"):
            state = await self.state(full=False)
            if state.head == 0:
                await state.append([self._started()], untold=1 if self.opening else 0)

    async def pop_item(self, *, wait: Wait = False) -> dict | None:
        """Remove and return the latest item (the cut stays in the store's truncations)."""
        async with self.exclusive(wait, "popping an item"):
            state = await self.settled()
            item = await pop_last_item(state)
            self.refresh_cost(state)
            return item

    async def clear(self, *, wait: Wait = False) -> None:
        """Empty the session; it stays listed, with its folder, model and title."""
        async with self.exclusive(wait, "clearing it"):
            state = await self.settled()
            await clear_items(state)
            self.refresh_cost(state)

    async def delete(self, *, wait: Wait = False) -> None:
        """Delete the session from the store; TurnInProgress while an operation runs
        on it here or in any other process (unless waiting)."""
        async with self.exclusive(wait, "a delete"):
            if not self.unstored:  # (one made here and never written is only let go of)
                await self.host.store.delete(self.session_id)
        self._state = None
        self.host._forget(self)

    async def fork(self, seq: int | None = None, *, title: str | None = None) -> str:
        """A new session with the conversation (and file history) up to just before
        the prompt at ``seq`` -- or all of it; the source is untouched.
        CheckpointNotFound for a seq that is not a prompt.

        The source is only read: no lease is taken and no unfinished restore of it
        is finished here, as that restore may be running in another window."""
        from .fork import forked_events
        from .host import new_session_id

        state = await self.state()
        if seq is not None:
            prompts = [c.seq for c in checkpoints(state.timeline)]
            if seq not in prompts:
                raise CheckpointNotFound(
                    f"seq {seq} is not a checkpoint of session {self.session_id!r}; "
                    f"its checkpoints are {prompts or 'none'}"
                )
        source = next((e for e in state.events[:1] if type(e) is ev.SessionStarted), None)
        source = source or self.opening
        started = session_started(
            source.workspace if source else str(self.roots[0]),
            state.model or self.host.model,
            title or (f"fork of {source.title}" if source and source.title else None),
        )
        fork_id = new_session_id()
        events = [started, *forked_events(state.timeline, seq)]
        await self.host.store.append(fork_id, events, expected_head=0)
        return fork_id

    async def close(self) -> None:
        """Cancel the running turn and let go of what the host holds for the session
        (its MCP servers, remembered permissions); it stays stored."""
        await self.cancel()
        self._state = None
        self._gate = None
        await self.host._resources.forget(self.session_id)
        self.host._forget(self)

    def reset_cost(self) -> None:
        """A brand-new session: nothing spent."""
        self.cost = 0.0
        self._loaded_cost = True

    def refresh_cost(self, state: SessionState) -> None:
        self.cost = state.cost
        self._loaded_cost = True
