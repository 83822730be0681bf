"""The session service: what both front ends offer, over the engine, protocol-neutral.

Every method takes and returns engine values (session ids, TurnResult, Checkpoint,
SessionInfo ...); a front end maps them to its wire. It is a registry of session
handles (:meth:`SessionService.handle`): an operation on a session the store does
not have is SessionNotFound unless the caller asks to create it. Sessions of
several folders live side by side: each folder gets an AgentHost of its own (the
engine its sessions' handles share) over one shared store, and a session runs in
the folder it was opened with (``cwd`` of ``new``, ``resume``, ``load``) or, if
none was named, the server's. Each session acts through its own client workspace
(``ClientPort.workspace(roots, session_id)``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import builtins
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from ..session import events as ev
from ..session.approval import Approval
from ..session.checkpoints import Checkpoint
from ..session.compaction import CompactResult
from ..session.environment import EnvironmentPolicy
from ..session.errors import InvalidArgument, SessionNotFound
from ..session.handle import SessionHandle
from ..session.host import AgentHost, new_session_id
from ..session.op_queue import Wait
from ..session.providers.limits import BY_OPTION as MODEL_LIMIT_OPTIONS
from ..session.providers.registry import DEFAULT_MODEL
from ..session.resources import McpConfigs
from ..session.sandbox import SandboxPolicy
from ..session.session_folder import session_started
from ..session.store import Checkpointer, SessionInfo, check_session_id, open_store, opens_a_store
from ..session.store.adapted import as_checkpointer
from ..session.store.base import ListCursor
from ..session.tasks import run_task
from ..session.turn import TurnResult
from .port import ClientPort, SessionChanged

if TYPE_CHECKING:
    from ..session.changes import FileDiff
    from ..session.restore import RestoreResult, UndoResult
    from ..session.restore_plan import RestorePreview


@attrs.define
class SendOutcome:
    result: TurnResult
    total_cost: float | None
    """The session's cost so far (USD; None: a model's cost is unknown)."""


@attrs.define
class SessionPage:
    sessions: list[SessionInfo]
    next_cursor: str | None


@attrs.define
class Resumed:
    session_id: str
    head: int
    turns: int
    total_cost: float | None = None
    """The session's cost so far (USD; None: a model's cost is unknown)."""


@attrs.define
class ContextItem:
    """Text the user attached to a prompt (an open file, a selection)."""

    text: str
    uri: str | None = None


class SessionService:
    def __init__(
        self,
        port: ClientPort,
        *,
        store: str | os.PathLike[str] | Checkpointer | None = None,
        model: str | None = None,
        approval: Approval = "ask",
        roots: Sequence[Path] | None = None,
        mcp_servers: McpConfigs | None = None,
        create_unknown: bool = False,
        **host_options: Any,
    ) -> None:
        self.port = port
        self.create_unknown = create_unknown
        """Whether an unknown session id is an empty session (made by its first
        write: the LSP dialect's and the CLI's ``run --session``), rather than
        SessionNotFound (ACP's), when a call does not say."""
        self._owns_store = opens_a_store(store)
        self.store: Checkpointer = open_store(store) if self._owns_store else as_checkpointer(store)  # type: ignore[arg-type]
        self.model = model or DEFAULT_MODEL
        self.approval = approval
        self.roots = [Path(r) for r in roots] if roots else [Path.cwd()]
        self._options = {"mcp_servers": mcp_servers, **host_options}
        self._hosts: dict[tuple[str, ...], AgentHost] = {}
        self._handles: dict[str, SessionHandle] = {}
        self._arrivals: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        """Per session: calls take their turn to ask the store whether it exists in
        the order they came (asyncio's lock is first come, first served), so that
        they reach the handle's queue in that order too; beside it, how many calls
        use the lock (it goes when none does)."""
        """The sessions this service holds, each in the folder it was opened with."""
        self._closing: asyncio.Future[None] | None = None
        self._held: set[str] = set()
        """Sessions opened through this service: the ones the client hears changed."""
        self._stop_watching = self._watch_store()
        self.host()  # the server's folder: bad options fail here, at start

    def _watch_store(self) -> Callable[[], None]:
        """Tell the client when another host changes a session it holds (a store
        that can tell: PostgreSQL's LISTEN/NOTIFY)."""
        on_change = getattr(self.store, "on_change", None)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if on_change is None or loop is None:
            return lambda: None

        def changed(session_id: str, head: int) -> None:  # on the store's thread
            if session_id in self._held and not loop.is_closed():
                with suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(self._announce, session_id, head)

        return on_change(changed)

    def _announce(self, session_id: str, head: int) -> None:
        run_task(
            self.port.update(session_id, SessionChanged(head)),
            name=f"tell the client session {session_id} changed",
        )

    # -- hosts: one per folder, the engine its sessions' handles share

    def host(self, cwd: str | os.PathLike[str] | None = None) -> AgentHost:
        """The engine of ``cwd`` (default: the server's folders), made on first use."""
        roots = [Path(os.path.realpath(cwd))] if cwd is not None else self.roots
        key = tuple(str(r) for r in roots)
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = AgentHost(
                store=self.store,
                model=self.model,
                approval=self.approval,
                workspace=self.port.workspace(roots),
                session_workspace=lambda sid: self.port.workspace(roots, sid),
                permission=self.port.request_permission,
                on_event=self.port.update,
                **self._options,
            )
        return host

    def model_limits(self) -> dict[str, Any]:
        """The model time limits the hosts were given (AgentHost's ``model_*`` arguments)."""
        return {k: v for k, v in self._options.items() if k in MODEL_LIMIT_OPTIONS}

    def set_model_limits(self, options: Mapping[str, Any]) -> None:
        """The model time limits (AgentHost's ``model_*`` arguments) of every host's
        model calls from now on, made or to come; ModelConfigError for a bad one."""
        for host in self._hosts.values():
            host.set_model_limits(options)
        for name in MODEL_LIMIT_OPTIONS:
            self._options.pop(name, None)
        self._options.update(options)

    def set_shell_environment(self, policy: EnvironmentPolicy) -> None:
        """The environment policy of every host's turns from now on, made or to come."""
        self._options["shell_environment"] = policy
        policy.register_secrets()
        for host in self._hosts.values():
            host.shell_environment = policy

    def set_sandbox_policy(self, policy: SandboxPolicy) -> None:
        """The sandbox of every host's sessions from now on, made or to come (a
        session that chose its own keeps it)."""
        self._options["sandbox"] = policy
        for host in self._hosts.values():
            old, host.sandbox = host.sandbox, host.sandbox.with_policy(policy)
            old.close()

    # -- handles: one per session this service holds

    async def handle(
        self,
        session_id: str,
        create: bool | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
    ) -> SessionHandle:
        """The session's handle: the one held here, else opened in ``cwd`` (default:
        the server's folders). SessionNotFound for a session the store does not
        have, unless ``create`` (its log then starts with its first write; None:
        as the service was made, ``create_unknown``).

        With ``cwd``, the session is (re)opened in that folder."""
        sid = check_session_id(session_id)
        if create is None:
            create = self.create_unknown
        if not create:
            # Asked of the store each time: another process may have deleted it.
            arrival, users = self._arrivals.setdefault(sid, (asyncio.Lock(), [0]))
            users[0] += 1
            try:
                async with arrival:
                    found = await self.exists(sid)
            finally:
                users[0] -= 1
                if not users[0]:
                    del self._arrivals[sid]
            # Nothing awaits from here until the caller joins the handle's queue.
            if not found:
                raise SessionNotFound(sid)
        held = self._handles.get(sid)
        if held is not None and (cwd is None or held.host is self.host(cwd)):
            return held
        return self._open(sid, cwd)

    def held(self, session_id: str) -> SessionHandle:
        """The handle of a session being served (a turn's update, its permission
        ask): the one held here, else one in the server's folders."""
        sid = check_session_id(session_id)
        return self._handles.get(sid) or self._open(sid, None)

    def _open(self, session_id: str, cwd: str | os.PathLike[str] | None) -> SessionHandle:
        old = self._handles.get(session_id)
        host = self.host(cwd)
        if old is not None and old.host is not host:
            old.host._forget(old)  # opened in another folder now
        handle = self._handles[session_id] = host.handle(session_id)
        if old is not None and old.unstored and old.opening is not None:
            # Not stored yet: it starts in the folder it is opened in now.
            handle.opening = attrs.evolve(old.opening, workspace=str(handle.roots[0]))
        self._held.add(session_id)
        return handle

    def _drop(self, session_id: str) -> None:
        self._handles.pop(session_id, None)
        self._held.discard(session_id)

    # -- sessions

    async def new(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        model: str | None = None,
        title: str | None = None,
        mcp_servers: McpConfigs | None = None,
    ) -> str:
        """A new, empty session, held here and not stored: its first change (a
        prompt, items, a fork of it) opens its log with the folder, model and title
        given here. Until then it is listed nowhere and unknown to other processes."""
        session_id = new_session_id()
        handle = self._open(session_id, cwd)
        if mcp_servers is not None:
            await handle.use_mcp_servers(mcp_servers)
        handle.opening = session_started(str(handle.roots[0]), model or handle.host.model, title)
        return session_id

    async def send(
        self,
        session_id: str | None,
        prompt: str,
        *,
        context: Sequence[ContextItem] = (),
        model: str | None = None,
        create: bool | None = None,
        wait: Wait = False,
    ) -> SendOutcome:
        """One turn; with ``create``, a session that does not exist yet (or none
        named) is started under that id, else SessionNotFound (None: as the
        service was made)."""
        sid = new_session_id() if session_id is None else session_id
        handle = await self.handle(sid, create=create)
        attached = [{"text": c.text, **({"uri": c.uri} if c.uri else {})} for c in context]
        result = await handle.send(prompt, model=model, context=attached, wait=wait)
        return SendOutcome(result, await handle.session_cost())

    async def cancel(self, session_id: str) -> bool:
        handle = self._handles.get(check_session_id(session_id))
        return await handle.cancel() if handle is not None else False

    async def list(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> SessionPage:
        """Sessions newest first, of ``cwd`` only when given, none that is empty (no
        prompt: stored so by older versions); ``cursor`` is a ``next_cursor`` this
        service returned. A page is read from the store by key (``list_page``): a
        session written meanwhile moves up and is not seen twice in one walk down."""
        if limit is not None and limit < 1:
            raise InvalidArgument("limit: must be 1 or more (omit it for every session)")
        if limit is None and cursor is None and cwd is None:
            return SessionPage([i for i in await self.store.list() if not i.empty], None)
        folder = os.path.realpath(cwd) if cwd is not None else None
        after = _cursor(cursor)
        batch = _LIST_BATCH if limit is None else limit + 1
        found: builtins.list[SessionInfo] = []
        while limit is None or len(found) <= limit:
            page = await self.store.list_page(batch, after)
            for info in page:
                if not info.empty and (folder is None or info.workspace == folder):
                    found.append(info)
            if len(page) < batch:
                break
            after = (page[-1].updated_at, page[-1].id)
        if limit is None or len(found) <= limit:
            return SessionPage(found, None)
        last = found[limit - 1]
        return SessionPage(found[:limit], _next_cursor(last.updated_at, last.id))

    async def resume(
        self, session_id: str, *, cwd: str | os.PathLike[str] | None = None
    ) -> Resumed:
        """The session, ready for its next turn (an interrupted restore finished)."""
        handle = await self.handle(session_id, cwd=cwd)
        state = await handle.resume()
        return Resumed(handle.session_id, state.head, state.turns, state.cost)

    async def load(
        self, session_id: str, *, cwd: str | os.PathLike[str] | None = None
    ) -> builtins.list[ev.Event]:
        """Resume an existing session and return its timeline, for a client that
        replays the conversation. SessionNotFound if it was never stored."""
        handle = await self.handle(session_id, cwd=cwd)
        state = await handle.resume()
        await state.load()  # the whole conversation, not only what a turn needs
        return list(state.timeline)

    async def history(self, session_id: str, limit: int | None = None) -> builtins.list[dict]:
        return await (await self.handle(session_id)).history(limit)

    async def checkpoints(self, session_id: str) -> builtins.list[Checkpoint]:
        return await (await self.handle(session_id)).list_checkpoints()

    async def rewound_to(self, session_id: str) -> int | None:
        """The checkpoint the session's last restore returned to, while it can be
        undone (its last change); None otherwise."""
        return await (await self.handle(session_id)).rewound_to()

    async def restore(
        self,
        session_id: str,
        seq: int,
        *,
        files: bool = True,
        conversation: bool = True,
        force: bool = False,
        paths: Sequence[str] | None = None,
        wait: Wait = False,
    ) -> RestoreResult:
        """Return to just before the prompt at ``seq``; with ``paths``, only those
        files are put back (the conversation as without)."""
        handle = await self.handle(session_id)
        return await handle.restore(seq, files, conversation, force=force, paths=paths, wait=wait)

    async def preview_restore(
        self,
        session_id: str,
        seq: int,
        *,
        files: bool = True,
        conversation: bool = True,
        paths: Sequence[str] | None = None,
        wait: Wait = False,
    ) -> RestorePreview:
        """What :meth:`restore` with the same arguments would do; nothing written."""
        handle = await self.handle(session_id)
        return await handle.preview_restore(seq, files, conversation, paths=paths, wait=wait)

    async def revert_files(
        self,
        session_id: str,
        seq: int,
        paths: Sequence[str],
        *,
        force: bool = False,
        dry_run: bool = False,
        wait: Wait = False,
    ) -> RestoreResult | RestorePreview:
        """Undo the turn at ``seq``'s changes to ``paths``, the conversation kept
        (undoable as a restore); with ``dry_run``, what it would do."""
        handle = await self.handle(session_id)
        return await handle.revert_files(seq, paths, force=force, dry_run=dry_run, wait=wait)

    async def changes(
        self,
        session_id: str,
        *,
        seq: int | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
    ) -> builtins.list[FileDiff]:
        """Per-file diffs of the turn at ``seq``, of the checkpoint range ``from_seq``
        to ``to_seq`` (None: now), or (neither) of the last turn."""
        handle = await self.handle(session_id)
        return await handle.changes(seq, from_seq, to_seq)

    async def undo_restore(
        self, session_id: str, *, force: bool = False, partial: bool = True, wait: Wait = False
    ) -> UndoResult:
        handle = await self.handle(session_id)
        return await handle.undo_restore(force=force, partial=partial, wait=wait)

    async def compact(
        self, session_id: str, instructions: str | None = None, *, wait: Wait = False
    ) -> CompactResult:
        return await (await self.handle(session_id)).compact(instructions, wait=wait)

    async def fork(
        self, session_id: str, seq: int | None = None, *, title: str | None = None
    ) -> str:
        """A new session with the conversation up to the checkpoint ``seq`` (or
        whole), in the source's folder; the source untouched."""
        source = await self.handle(session_id)
        fork_id = await source.fork(seq, title=title)
        self._handles[fork_id] = source.host.handle(fork_id)
        self._held.add(fork_id)
        return fork_id

    async def exists(self, session_id: str) -> bool:
        """Whether the session is in the store, or made here and not written yet."""
        sid = check_session_id(session_id)
        if await self.store.head(sid) > 0:
            return True
        held = self._handles.get(sid)
        return held is not None and held.unstored

    async def use_mcp_servers(self, session_id: str, servers: McpConfigs) -> None:
        """The session's own MCP servers from now on, instead of the server's."""
        await (await self.handle(session_id)).use_mcp_servers(servers)

    async def model_of(self, session_id: str) -> str:
        """The model the session's next turn uses unless another is named."""
        return await (await self.handle(session_id)).model()

    def set_approval(self, session_id: str, approval: Approval) -> None:
        """Which of the session's tool calls need the user's permission, from now on
        (ACP's session modes)."""
        self.held(session_id).approval = approval

    def approval_of(self, session_id: str) -> Approval:
        return self.held(session_id).approval

    def set_sandbox(self, session_id: str, mode: str) -> None:
        """The session's sandbox mode from its next command on (the host's policy
        in that mode: its deny list, limits and network stay)."""
        self.held(session_id).set_sandbox(mode)

    def sandbox_of(self, session_id: str) -> SandboxPolicy:
        return self.held(session_id).sandbox.policy

    async def close(self, session_id: str) -> None:
        """Stop the session's running turn and let go of it here; it stays stored."""
        await (await self.handle(session_id)).close()
        self._drop(session_id)

    async def delete(self, session_id: str, *, wait: Wait = False) -> None:
        await (await self.handle(session_id)).delete(wait=wait)
        self._drop(session_id)

    async def shutdown(self) -> None:
        """Cancel running turns (each closes its log), then release every host and
        the store; a second call (a shutdown, then the client hanging up) waits for
        the first."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._closing)

    async def _shutdown(self) -> None:
        self._stop_watching()
        await asyncio.gather(*(host.close() for host in self._hosts.values()))
        if self._owns_store:
            await self.store.close()


_LIST_BATCH = 200
"""Sessions read from the store at a time when a listing has no limit but a
folder or cursor."""


def _next_cursor(updated_at: float, session_id: str) -> str:
    """The key of a page's last session, opaque to clients."""
    return base64.urlsafe_b64encode(orjson.dumps([updated_at, session_id])).decode()


def _cursor(cursor: str | None) -> ListCursor | None:
    if cursor is None:
        return None
    try:
        updated_at, session_id = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
        if not isinstance(updated_at, int | float) or not isinstance(session_id, str):
            raise ValueError(cursor)
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise InvalidArgument(
            f"cursor: {cursor!r} is not a nextCursor this server returned"
        ) from None
    return (float(updated_at), session_id)
