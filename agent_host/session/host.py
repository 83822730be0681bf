"""AgentHost: the Python API of the engine (the server and the CLI sit on it).

An AgentHost is a folder's engine -- its store, model provider, MCP servers and
settings -- and a small registry of the session handles it holds
(:class:`~.handle.SessionHandle`, which own each session's state, operation queue
and turn lease). Its "current session" is one of them: calls that name no session
are about it. It offers the session semantics users know from Claude Code, Codex
and the OpenAI Agents SDK: resume, list, checkpoints, restore and undo,
compaction, and the SDK's ``get_items / add_items / pop_item / clear_session``
(those calls about one session are in host_sessions.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .approval import Approval, PermissionCallback, check_approval
from .environment import EnvironmentPolicy, as_policy
from .errors import CapabilityUnsupported, HostClosed
from .handle import SessionHandle
from .host_sessions import SessionCalls
from .model import ModelProvider
from .op_queue import Wait
from .pricing import price_of
from .providers.limits import provider_keywords
from .providers.registry import DEFAULT_MODEL
from .redaction import SECRETS
from .resources import HostResources, McpConfigs
from .sandbox import Sandbox, SandboxPolicy, as_sandbox_policy
from .state import Listener, SessionState
from .store import Checkpointer, SessionInfo, check_session_id, open_store, opens_a_store
from .store.adapted import as_checkpointer
from .streaming import tap
from .workspace import DiskWorkspace, Workspace
from .workspace.processes import CommandProcesses

log = logging.getLogger(__name__)


def new_session_id() -> str:
    """Sortable by creation time, unique without coordination."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(4)


class AgentHost(SessionCalls):
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
        session_workspace: Callable[[str], Workspace] | None = None,
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
        model_first_byte_timeout: float | str | Mapping[str, float] | None = None,
        model_timeout: float | str | Mapping[str, float] | None = None,
        model_total_timeout: float | str | Mapping[str, float] | None = None,
        model_retries: int | str | Mapping[str, int] | None = None,
        sandbox: SandboxPolicy | str | Mapping[str, Any] | None = None,
    ) -> None:
        """The model's time limits (``model_first_byte_timeout``, ``model_timeout``,
        ``model_total_timeout``, ``model_retries``; see providers/limits.py) are a
        number, or per provider ``"20,ollama=90"`` / ``{"*": 20, "ollama": 90}``;
        None: the environment's ``AGENT_HOST_MODEL_*``, else the default.
        ``sandbox``: how commands and stdio MCP servers are confined
        (:mod:`.sandbox`): a mode's name (``read-only``, ``workspace-write``,
        ``full``), its JSON form or a SandboxPolicy; None: ``AGENT_HOST_SANDBOX``,
        else ``workspace-write``."""
        self.persistent = sessions
        if not sessions:
            store = "memory:"
        self._owns_store = opens_a_store(store)
        # A store object may be a whole Checkpointer or LiteAgent's six methods,
        # adapted (IncompleteStore names what a lesser one lacks).
        self.store: Checkpointer = open_store(store) if self._owns_store else as_checkpointer(store)  # type: ignore[arg-type]
        self.shell_environment = as_policy(shell_environment)
        """What commands and MCP servers started in this host's turns see of
        os.environ (ShellEnvironmentError for a bad JSON form)."""
        self.shell_environment.register_secrets()
        SECRETS.add(api_key)
        SECRETS.add_url(store if isinstance(store, str) else None)
        self._processes = CommandProcesses()
        self.sandbox = Sandbox(as_sandbox_policy(sandbox), hide=_store_places(self.store))
        """The sandbox of this host's sessions (a session may have its own)."""
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
        self._session_workspace = session_workspace
        self._handles: dict[str, SessionHandle] = {}
        self.session_id = check_session_id(session_id) if session_id else new_session_id()
        """The current session: the one calls that name none are about."""
        self._closing: asyncio.Future[None] | None = None
        self._last_cost: float | None = 0.0
        self._resources = HostResources(
            model=self.model,
            provider=provider,
            endpoint={
                "base_url": base_url,
                "api_key": api_key,
                **provider_keywords(
                    model_first_byte_timeout=model_first_byte_timeout,
                    model_timeout=model_timeout,
                    model_total_timeout=model_total_timeout,
                    model_retries=model_retries,
                ),
            },
            roots=self.workspace.roots,
            blobs=self.store.blobs,
            capture_commands=capture_commands,
            mcp_servers=mcp_servers,
        )

    def set_model_limits(self, options: Mapping[str, Any]) -> None:
        """The model time limits (``model_first_byte_timeout``... as the constructor
        takes them; those not named: the environment's, else the default) of the
        model calls from now on. ModelConfigError for a bad value, naming it."""
        self._resources.set_limits(provider_keywords(**options))

    async def __aenter__(self) -> AgentHost:
        self._refuse_if_closed()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- handles: one per session this host holds

    def handle(self, session_id: str | None = None) -> SessionHandle:
        """The handle of ``session_id`` (default: the current session), opened on
        first use; the session need not be stored yet."""
        self._refuse_if_closed()
        sid = self._sid(session_id)
        handle = self._handles.get(sid)
        if handle is None:
            workspace = self._session_workspace(sid) if self._session_workspace else None
            handle = self._handles[sid] = SessionHandle(self, sid, workspace)
        return handle

    def holds(self, session_id: str) -> bool:
        """Whether this host has the session open."""
        return session_id in self._handles

    def _forget(self, handle: SessionHandle) -> None:
        if self._handles.get(handle.session_id) is handle:
            del self._handles[handle.session_id]

    # -- sessions

    async def new_session(self) -> str:
        """Start a fresh, empty session and make it current; the old one is kept."""
        self.session_id = new_session_id()
        self.handle().reset_cost()
        return self.session_id

    @property
    def cost(self) -> float | None:
        """USD spent in the current session (None: unknown, a model had no price)."""
        return self.handle().cost if self._closing is None else self._last_cost

    async def resume(self, session_id: str) -> SessionState:
        """Make ``session_id`` current; an unknown id starts empty under that id.

        A restore a crash interrupted is finished first, unless another process
        is working on the session (then that one finishes it)."""
        self._require_persistence("resume")
        handle = self.handle(check_session_id(session_id))
        state = await handle.resume()
        self.session_id = handle.session_id
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

    async def delete_session(self, session_id: str, *, wait: Wait = False) -> None:
        """Delete the session; TurnInProgress while a turn, restore or compaction
        runs on it here or in any other process (unless ``wait``)."""
        self._require_persistence("delete_session")
        await self.handle(check_session_id(session_id)).delete(wait=wait)

    async def fork(
        self, session_id: str, seq: int | None = None, *, title: str | None = None
    ) -> str:
        """A new session with the conversation (and file history) of ``session_id``
        up to just before the prompt at ``seq`` -- or all of it; the source is
        untouched. CheckpointNotFound for a seq that is not a prompt."""
        self._require_persistence("fork")
        return await self.handle(session_id).fork(seq, title=title)

    async def session_model(self, session_id: str) -> str:
        """The model the session's next turn uses unless another is named."""
        return await self.handle(check_session_id(session_id)).model()

    def set_approval(self, session_id: str, approval: Approval) -> None:
        """The session's approval policy from its next tool call on (answers the
        user gave "always" are kept)."""
        self.handle(check_session_id(session_id)).approval = approval

    def approval_of(self, session_id: str) -> Approval:
        return self.handle(check_session_id(session_id)).approval

    def set_sandbox(self, session_id: str, policy: SandboxPolicy | str | None) -> None:
        """The session's sandbox from its next command on: a policy, a mode's name,
        None: the host's."""
        self.handle(check_session_id(session_id)).set_sandbox(policy)

    def sandbox_of(self, session_id: str) -> SandboxPolicy:
        return self.handle(check_session_id(session_id)).sandbox.policy

    async def close_session(self, session_id: str) -> None:
        """Cancel the session's running turn and let go of what this host holds for
        it (its MCP servers, remembered permissions); it stays stored."""
        sid = check_session_id(session_id)
        handle = self._handles.get(sid)
        if handle is not None:
            await handle.close()
        else:
            await self._resources.forget(sid)

    async def close(self) -> None:
        """Cancel running turns (each closes its log), then release the model and store.

        Closing again (a server's shutdown, then its client hanging up) waits for the
        first close to finish.
        """
        if self._closing is None:
            current = self._handles.get(self.session_id)
            self._last_cost = current.cost if current is not None else 0.0
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        await asyncio.gather(*(handle.cancel() for handle in list(self._handles.values())))
        # What commands left running in sessions of their own ends with the host.
        await asyncio.to_thread(self._processes.close)
        for handle in self._handles.values():
            handle.set_sandbox(None)
        self.sandbox.close()
        await self._resources.close()
        if self._owns_store:
            await self.store.close()

    # -- internals

    async def _state(self, session_id: str, *, full: bool = True) -> SessionState:
        """The session, brought up to date with what other writers appended."""
        return await self.handle(session_id).state(full=full)

    def _sid(self, session_id: str | None) -> str:
        """The session a call is about: the current one only when none is named."""
        return self.session_id if session_id is None else check_session_id(session_id)

    async def use_mcp_servers(self, session_id: str, servers: McpConfigs) -> None:
        """Give the session its own MCP servers (as ACP's ``session/new`` does),
        instead of the host's, for this host's lifetime; never stored, since their
        config holds secrets. McpConfigError for a bad config."""
        await self.handle(check_session_id(session_id)).use_mcp_servers(servers)

    async def _emit(self, session_id: str, item: object) -> None:
        await tap(session_id, item)  # the stream of the operation reporting it, if any
        if self._on_event is not None:
            maybe = self._on_event(session_id, item)
            if maybe is not None:
                await maybe

    def _refuse_if_closed(self) -> None:
        if self._closing is not None:
            raise HostClosed(
                "this AgentHost was closed; open a new one to go on (its sessions are kept)"
            )

    def _require_persistence(self, what: str) -> None:
        self._refuse_if_closed()
        if not self.persistent:
            raise CapabilityUnsupported(
                f"{what} manages stored sessions, and this host was created with "
                "sessions=False (one conversation in memory): create it with sessions=True "
                "and a store to use it"
            )


def _store_places(store: object) -> list[Path]:
    """Where a store keeps its sessions on this machine (a file store's folder, an
    SQLite file and its journals): hidden from commands, which could otherwise
    rewrite the history a rewind trusts."""
    root = getattr(store, "root", None)
    if isinstance(root, Path):
        return [root]
    path = getattr(store, "path", None)
    if isinstance(path, Path):
        return [path, *(path.with_name(path.name + end) for end in ("-wal", "-shm", "-journal"))]
    return []
