"""AgentHost: the Python API of the engine (the server and the CLI sit on it).

It owns the current session, runs turns one at a time per session, and offers the
session semantics users know from Claude Code, Codex and the OpenAI Agents SDK:
resume, list, checkpoints, restore and undo, compaction, and the SDK's
``get_items / add_items / pop_item / clear_session``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import capture_log
from . import events as ev
from .approval import Approval, Gate, PermissionCallback, check_approval
from .checkpoints import Checkpoint, checkpoints, cut_short_writes, pending_capture
from .compaction import CompactResult, compact_session
from .environment import EnvironmentPolicy, as_policy, using_policy
from .errors import (
    CapabilityUnsupported,
    CheckpointNotFound,
    HostClosed,
    InvalidArgument,
    ToolError,
    TurnInProgress,
    WorkspaceMismatch,
)
from .interrupted import close_interrupted_turn
from .items import clear_items, items_to_events, limit_items, pop_last_item, to_items
from .model import ModelProvider
from .pricing import price_of
from .providers.registry import DEFAULT_MODEL
from .redaction import SECRETS
from .resources import HostResources, McpConfigs
from .session_folder import session_files
from .state import Listener, SessionState
from .store import Checkpointer, SessionInfo, check_session_id, open_store
from .turn import TokenUsage, TurnResult, TurnSettings, run_turn
from .workspace import DiskWorkspace, Workspace
from .workspace.processes import CommandProcesses, tracking

if TYPE_CHECKING:
    from .restore import RestoreResult, UndoResult

log = logging.getLogger(__name__)


def model_bounds(idle: float | None, total: float | None) -> dict[str, float]:
    """``open_provider``'s bounds from the host's settings (None: the default);
    ModelConfigError for one that is not a positive number of seconds."""
    bounds = {"timeout": idle, "total_timeout": total}
    for name, value in (("model_timeout", idle), ("model_total_timeout", total)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9
        ):
            from .providers.errors import ModelConfigError

            raise ModelConfigError(f"{name} must be a positive number of seconds, not {value!r}")
    return {k: float(v) for k, v in bounds.items() if v is not None}


def new_session_id() -> str:
    """Sortable by creation time, unique without coordination."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(4)


class AgentHost:
    def __init__(
        self,
        store: str | os.PathLike[str] | Checkpointer | None = None,
        model: str = DEFAULT_MODEL,
        workdir: str | os.PathLike[str] | None = None,
        approval: Approval = "auto",
        *,
        sessions: bool = True,
        session_id: str | None = None,
        workspace: Workspace | None = None,
        provider: ModelProvider | None = None,
        permission: PermissionCallback | None = None,
        on_event: Listener | None = None,
        system_prompt: str | None = None,
        max_turns: int = 50,
        prices: Mapping[str, Any] | None = None,
        context_window: int = 128_000,
        auto_compact: float | None = 0.8,
        base_url: str | None = None,
        api_key: str | None = None,
        capture_commands: bool = True,
        mcp_servers: McpConfigs | None = None,
        shell_environment: EnvironmentPolicy | Mapping[str, Any] | None = None,
        model_timeout: float | None = None,
        model_total_timeout: float | None = None,
    ) -> None:
        self.persistent = sessions
        if not sessions:
            store = "memory:"
        self._owns_store = not hasattr(store, "append")
        self.store: Checkpointer = store if not self._owns_store else open_store(store)  # type: ignore[arg-type, assignment]
        self.shell_environment = as_policy(shell_environment)
        """What commands and MCP servers started in this host's turns see of
        os.environ (ShellEnvironmentError for a bad JSON form)."""
        self.shell_environment.register_secrets()
        SECRETS.add(api_key)
        SECRETS.add_url(store if isinstance(store, str) else None)
        self._processes = CommandProcesses()
        self.workspace = workspace or DiskWorkspace(
            [Path(workdir or os.getcwd())], environment=self.shell_environment
        )
        self.model = provider.model if provider else model
        self.approval = check_approval(approval)
        self._permission = permission
        self._on_event = on_event
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.prices = dict(prices) if prices else None
        if self.prices:
            price_of(self.model, self.prices)  # a malformed table fails here, not mid-turn
        self.context_window = context_window
        self.auto_compact = auto_compact
        self._states: dict[str, SessionState] = {}
        self._gates: dict[str, Gate] = {}
        self._turns: dict[str, asyncio.Task[TurnResult]] = {}
        self.session_id = check_session_id(session_id) if session_id else new_session_id()
        self.cost: float | None = 0.0
        """USD spent in the current session (None: unknown, a model had no price)."""
        self._loaded_cost = False
        self._closing: asyncio.Future[None] | None = None
        self._resources = HostResources(
            model=self.model,
            provider=provider,
            endpoint={
                "base_url": base_url,
                "api_key": api_key,
                **model_bounds(model_timeout, model_total_timeout),
            },
            roots=self.workspace.roots,
            blobs=self.store.blobs,
            capture_commands=capture_commands,
            mcp_servers=mcp_servers,
        )

    async def __aenter__(self) -> AgentHost:
        self._refuse_if_closed()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- sessions

    async def new_session(self) -> str:
        """Start a fresh, empty session and make it current; the old one is kept."""
        self.session_id = new_session_id()
        self.cost = 0.0
        self._loaded_cost = True
        return self.session_id

    async def resume(self, session_id: str) -> SessionState:
        """Make ``session_id`` current; an unknown id starts empty under that id.

        A restore a crash interrupted is finished first, unless another process
        is working on the session (then that one finishes it)."""
        self._require_persistence("resume")
        sid = check_session_id(session_id)
        try:
            async with self.store.turn_lease(sid):
                state = await self._settled(sid, full=False)
        except TurnInProgress:
            state = await self._state(sid, full=False)
        self._make_current(session_id, state)
        return state

    async def list_sessions(
        self, workspace: str | os.PathLike[str] | None = None
    ) -> list[SessionInfo]:
        """Sessions newest first; with ``workspace``, only those started in that folder."""
        self._require_persistence("list_sessions")
        infos = await self.store.list()
        if workspace is None:
            return infos
        folder = os.path.realpath(workspace)
        return [i for i in infos if i.workspace == folder]

    async def delete_session(self, session_id: str) -> None:
        """Delete the session; TurnInProgress while a turn, restore or compaction
        runs on it here or in any other process."""
        self._require_persistence("delete_session")
        self._refuse_if_running(session_id)
        async with self.store.turn_lease(check_session_id(session_id)):
            self._refuse_if_running(session_id)
            await self.store.delete(session_id)
        self._states.pop(session_id, None)

    async def fork(
        self, session_id: str, seq: int | None = None, *, title: str | None = None
    ) -> str:
        """A new session with the conversation (and file history) of ``session_id``
        up to just before the prompt at ``seq`` -- or all of it; the source is
        untouched. CheckpointNotFound for a seq that is not a prompt.

        The source is only read: no lease is taken and no unfinished restore of it
        is finished here, as that restore may be running in another window."""
        from .fork import forked_events

        state = await self._state(self._sid(session_id))
        if seq is not None:
            prompts = [c.seq for c in checkpoints(state.timeline)]
            if seq not in prompts:
                raise CheckpointNotFound(
                    f"seq {seq} is not a checkpoint of session {session_id!r}; "
                    f"its checkpoints are {prompts or 'none'}"
                )
        source = next((e for e in state.events[:1] if type(e) is ev.SessionStarted), None)
        started = ev.SessionStarted(
            workspace=source.workspace if source else str(self.workspace.roots[0]),
            model=state.model or self.model,
            title=title or (f"fork of {source.title}" if source and source.title else None),
        )
        fork_id = new_session_id()
        events = [started, *forked_events(state.timeline, seq)]
        await self.store.append(fork_id, events, expected_head=0)
        return fork_id

    async def session_model(self, session_id: str) -> str:
        """The model the session's next turn uses unless another is named."""
        state = await self._state(check_session_id(session_id), full=False)
        return state.model or self.model

    def set_approval(self, session_id: str, approval: Approval) -> None:
        """The session's approval policy from its next tool call on (answers the
        user gave "always" are kept)."""
        self._gate(check_session_id(session_id)).policy = check_approval(approval)

    def approval_of(self, session_id: str) -> Approval:
        return self._gate(check_session_id(session_id)).policy

    async def close_session(self, session_id: str) -> None:
        """Cancel the session's running turn and let go of what this host holds for
        it (its MCP servers, remembered permissions); it stays stored."""
        sid = check_session_id(session_id)
        await self.cancel(sid)
        self._states.pop(sid, None)
        self._gates.pop(sid, None)
        await self._resources.forget(sid)

    async def history(self, session_id: str | None = None, limit: int | None = None) -> list[dict]:
        """The session as the model sees it, in OpenAI chat format."""
        state = await self._state(self._sid(session_id), full=False)
        return await state.history(limit)

    async def session_cost(self, session_id: str | None = None) -> float | None:
        """Money spent in the session so far (USD); None when a model's cost is unknown."""
        return (await self._state(self._sid(session_id), full=False)).cost

    async def list_checkpoints(self, session_id: str | None = None) -> list[Checkpoint]:
        """The prompts to restore to; a command's changes a crash kept from the log
        are logged first (unless a turn holds the session: then they may be a
        command's that is running)."""
        sid = self._sid(session_id)
        state = await self._state(sid)
        task = self._turns.get(sid)
        if pending_capture(state.latest) is not None and (task is None or task.done()):
            try:
                async with self.store.turn_lease(sid):
                    state = await self._settled(sid)
            except TurnInProgress:
                pass  # a turn in another process: its capture is its own
        return checkpoints(state.timeline)

    # -- turns

    async def send(
        self,
        prompt: str,
        session_id: str | None = None,
        model: str | None = None,
        context: list[dict[str, Any]] | None = None,
    ) -> TurnResult:
        """Run one turn. A second send to a session with a turn running raises TurnInProgress.

        ``model`` overrides, for this turn, the model the session was started with;
        ``context`` (``{"text", "uri"?}`` each) is logged beside the prompt.
        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidArgument("prompt must be a non-empty string")
        sid = self._sid(session_id)
        self._refuse_if_running(sid)
        task = asyncio.create_task(self._run(sid, prompt, model, context or None))
        self._turns[sid] = task
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if task.cancelled() and not (me and me.cancelling()):
                # cancel() landed before the turn began: nothing reached the log.
                return TurnResult(sid, 0, "cancelled", "", TokenUsage(), 0.0)
            # Our caller was cancelled: cancel the turn, let it close the log, re-raise.
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            if self._turns.get(sid) is task:
                del self._turns[sid]
        if sid == self.session_id:
            self.cost = (
                None if self.cost is None or result.cost is None else self.cost + result.cost
            )
        return result

    async def cancel(self, session_id: str | None = None) -> bool:
        """Cancel the running turn; its send returns with stop_reason "cancelled"."""
        task = self._turns.get(self._sid(session_id))
        if task is None or task.done():
            return False
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return True

    async def _run(
        self, sid: str, prompt: str, model: str | None, context: list[dict[str, Any]] | None
    ) -> TurnResult:
        state = await self._state(sid, full=False)
        # Refused before anything is logged: a session of a folder not open here.
        workspace = await self._session_workspace(state)
        chosen = model if model and model != state.model else None
        provider = self._resources.provider(model or state.model or self.model)
        if sid == self.session_id and not self._loaded_cost:
            self.cost = state.cost
            self._loaded_cost = True
        limit = int(self.context_window * self.auto_compact) if self.auto_compact else None
        settings = TurnSettings(
            provider=provider,
            workspace=workspace,
            gate=self._gate(sid),
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            prices=self.prices,
            compact_at_tokens=limit,
            compact=lambda: compact_session(state, provider, None, prices=self.prices),
            index=self._resources.index(workspace.roots[0]),
            mcp=self._resources.mcp_servers(sid),
            chosen_model=chosen,
            context=context,
        )
        async with self.store.turn_lease(sid):
            await _finish_pending(state, workspace)
            await close_interrupted_turn(state)
            # Set for this turn's task only: the workspace (whoever made it) and
            # the MCP servers the turn starts read them.
            with using_policy(self.shell_environment), tracking(self._processes):
                return await run_turn(state, prompt, settings)

    # -- restore

    async def restore(
        self,
        session_id: str,
        seq: int,
        files: bool = True,
        conversation: bool = True,
        *,
        force: bool = False,
    ) -> RestoreResult:
        """Return to the moment just before the prompt at ``seq`` (undoable).

        Files changed since the session last wrote them are left and reported as
        ``conflicts``, unless ``force``."""
        self._refuse_if_running(session_id)
        async with self.store.turn_lease(check_session_id(session_id)):
            if not (files or conversation):
                raise InvalidArgument("restore needs files, conversation or both")
            self._refuse_if_running(session_id)  # one may have started while we waited
            state = await self._settled(session_id)
            from .restore import restore_to

            result = await restore_to(state, self.workspace, seq, files, conversation, force)
        self._make_current(session_id, state)
        return result

    async def undo_restore(self, session_id: str | None = None) -> UndoResult:
        """Undo the last restore: files and conversation as they were before it."""
        sid = self._sid(session_id)
        self._refuse_if_running(sid)
        async with self.store.turn_lease(sid):
            from .restore import undo_last_restore

            state = await self._settled(sid)
            result = await undo_last_restore(state, self.workspace)
        self._make_current(sid, state)
        return result

    # -- compaction

    async def compact(
        self, instructions: str | None = None, session_id: str | None = None
    ) -> CompactResult:
        """Summarise the older part of the conversation; atomic if the model fails."""
        sid = self._sid(session_id)
        self._refuse_if_running(sid)
        async with self.store.turn_lease(sid):
            state = await self._settled(sid)
            provider = self._resources.provider(state.model or self.model)
            return await compact_session(state, provider, instructions, prices=self.prices)

    # -- the OpenAI Agents SDK's Session protocol (agent_host.agents wraps it)

    async def get_items(
        self, limit: int | None = None, *, session_id: str | None = None
    ) -> list[dict]:
        """The session's Responses API items, as the SDK's ``SQLiteSession`` returns
        them: the latest ``limit`` (None or negative: all), items the SDK stored
        verbatim, our own turns' events as the items the SDK stores for them."""
        state = await self._state(self._sid(session_id))
        return limit_items(to_items(state.timeline), limit)

    async def add_items(self, items: list[dict], *, session_id: str | None = None) -> None:
        """Append Responses API items (chat-completions messages are taken too, as the
        Responses items they stand for), all in one atomic append."""
        sid = self._sid(session_id)
        self._refuse_if_running(sid)
        events = items_to_events(items)
        if not events:
            return
        async with self.store.turn_lease(sid):
            state = await self._settled(sid)
            if state.head == 0:
                events.insert(0, self._session_started())
            await state.append(events)

    async def pop_item(self, *, session_id: str | None = None) -> dict | None:
        """Remove and return the latest item, exactly it: the log is cut back to the
        event it came from (the cut stays in the store's truncations)."""
        sid = self._sid(session_id)
        self._refuse_if_running(sid)
        async with self.store.turn_lease(sid):
            state = await self._settled(sid)
            item = await pop_last_item(state)
            self._refresh_cost(sid, state)
            return item

    async def clear_session(self, *, session_id: str | None = None) -> None:
        """Empty the session: its items go (retrievable in the store's truncations);
        it stays listed, with its folder, model and title."""
        sid = self._sid(session_id)
        self._refuse_if_running(sid)
        async with self.store.turn_lease(sid):
            state = await self._settled(sid)
            await clear_items(state)
            self._refresh_cost(sid, state)

    async def close(self) -> None:
        """Cancel running turns (each closes its log), then release the model and store.

        Closing again (a server's shutdown, then its client hanging up) waits for the
        first close to finish.
        """
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        for task in list(self._turns.values()):
            task.cancel()
        await asyncio.gather(*self._turns.values(), return_exceptions=True)
        # What commands left running in sessions of their own ends with the host.
        await asyncio.to_thread(self._processes.close)
        await self._resources.close()
        if self._owns_store:
            await self.store.close()

    # -- internals

    async def _settled(self, session_id: str, *, full: bool = True) -> SessionState:
        """The session, with what a crash interrupted finished: a restore and a
        command's capture. Call it holding the session's turn lease (without it, a
        pending capture may be a turn's command running elsewhere)."""
        state = await self._state(session_id, full=full)
        try:
            workspace = await self._session_workspace(state)
        except WorkspaceMismatch as mismatch:
            # Its files are not here to tidy; what needs no files (the
            # conversation, a capture finished from its stored index) goes on.
            log.info("session %s: its files are left as they are: %s", session_id, mismatch)
            workspace = None
        await _finish_pending(state, workspace)
        return state

    async def _session_workspace(self, state: SessionState) -> Workspace:
        """The workspace as the session names its files: rooted at the folder it was
        started in (a new session's is this workspace's first root); WorkspaceMismatch
        if that folder is not open here."""
        return await session_files(state, self.workspace, to="continue it", unrecorded=None)

    async def _state(self, session_id: str, *, full: bool = True) -> SessionState:
        """The session, brought up to date with what other writers appended.

        Without ``full``, only what a turn needs: resumed from its snapshot, when it
        has one, and its whole log read only when something looks further back."""
        self._refuse_if_closed()
        state = self._states.get(session_id)
        if state is None:
            state = SessionState(self.store, check_session_id(session_id), listener=self._emit)
            self._states[session_id] = state
        await state.refresh(full=full)
        return state

    def _sid(self, session_id: str | None) -> str:
        """The session a call is about: the current one only when none is named."""
        return self.session_id if session_id is None else check_session_id(session_id)

    def _session_started(self) -> ev.SessionStarted:
        return ev.SessionStarted(workspace=str(self.workspace.roots[0]), model=self.model)

    def _make_current(self, session_id: str, state: SessionState) -> None:
        """What resume does, and a restore (as LiteAgent's): the session becomes current."""
        self.session_id = session_id
        self._refresh_cost(session_id, state)

    def _refresh_cost(self, session_id: str, state: SessionState) -> None:
        if session_id == self.session_id:
            self.cost = state.cost
            self._loaded_cost = True

    async def use_mcp_servers(self, session_id: str, servers: McpConfigs) -> None:
        """Give the session its own MCP servers (as ACP's ``session/new`` does),
        instead of the host's, for this host's lifetime; never stored, since their
        config holds secrets. McpConfigError for a bad config."""
        sid = check_session_id(session_id)
        self._refuse_if_running(sid)
        await self._resources.use_mcp_servers(sid, servers)

    def _gate(self, session_id: str) -> Gate:
        gate = self._gates.get(session_id)
        if gate is None:
            gate = self._gates[session_id] = Gate(self.approval, self._permission)
        return gate

    async def _emit(self, session_id: str, item: object) -> None:
        if self._on_event is not None:
            maybe = self._on_event(session_id, item)
            if maybe is not None:
                await maybe

    def _refuse_if_closed(self) -> None:
        if self._closing is not None:
            raise HostClosed(
                "this AgentHost was closed; open a new one to go on (its sessions are kept)"
            )

    def _refuse_if_running(self, session_id: str) -> None:
        self._refuse_if_closed()
        task = self._turns.get(session_id)
        if task is not None and not task.done():
            raise TurnInProgress(
                f"a turn is running in session {session_id!r}; wait for it or cancel it first"
            )

    def _require_persistence(self, what: str) -> None:
        self._refuse_if_closed()
        if not self.persistent:
            raise CapabilityUnsupported(
                f"{what} needs stored sessions, but this host was created with sessions=False"
            )


async def _finish_pending(state: SessionState, workspace: Workspace | None) -> None:
    """What a crash left unfinished; with no ``workspace`` (the session's folder is
    not open here), only what needs no files."""
    # restore.py is loaded on first use, out of the server's start-up (P5).
    from .restore import finish_pending

    await capture_log.finish_pending(state)
    if workspace is None:
        return
    for path in cut_short_writes(state.latest):
        try:
            await workspace.discard_partial_writes(path)
        except ToolError as exc:  # a folder on the way swapped meanwhile
            log.warning("the temp file of %s is left for the next sweep: %s", path, exc)
    await finish_pending(state, workspace)
