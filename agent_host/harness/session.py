"""Session: one agent session, turn after turn, from sync or async code.

Its lifecycle is LiteLLM's harness session's: ``close()`` ends it for good (the
log stays in the store); ``detach()`` parks an idle session and ``stop()`` cancels
what runs, both releasing the host and returning the State that resumes the
session in any process. Leaving a ``with`` block closes it unless it was parked
or stopped already.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ..session.errors import CapabilityUnsupported, HostClosed, StateIncompatible, TurnInProgress
from ..session.op_queue import DEFAULT_WAIT, Wait, as_wait
from .loop import LoopThread, acall, call, refuse_inside_loop
from .state import State, store_url
from .streams import SessionStream

if TYPE_CHECKING:
    from ..session.host import AgentHost
    from ..session.turn import TurnResult

log = logging.getLogger(__name__)
T = TypeVar("T")
OPEN, CLOSED, DETACHED, STOPPED = "open", "closed", "detached", "stopped"
FROM_STATE = "state"


class Session:
    """Made by ``agent_session``, ``aagent_session``, ``agent_resume`` or
    ``aagent_resume``. The blocking methods (``run``, ``history``, ``close``,
    ``detach``, ``stop``) refuse inside a running event loop; their ``a``-twins
    are for async code."""

    def __init__(
        self,
        host: AgentHost,
        loop: asyncio.AbstractEventLoop,
        thread: LoopThread | None,
        store: str | None,
        cost: float | None,
    ) -> None:
        self._host = host
        self._loop = loop
        self._thread = thread
        self._store = store
        self._cost = cost
        self._session_id = host.session_id
        self._phase = OPEN
        self._turns = 0  # run() calls in flight: touched on self._loop only

    def __repr__(self) -> str:
        return f"Session({self._session_id!r}, {self._phase})"

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def cost(self) -> float | None:
        """USD spent in the session so far, turns before a resume included; None
        when a model call's cost is unknown (a model without a price)."""
        return self._cost

    def run(self, prompt: str, *, wait: float | None = DEFAULT_WAIT) -> TurnResult:
        """Run one turn to its end. A turn running in the session (from another
        thread, task or process) goes first: this one waits at most ``wait``
        seconds for it (None: as long as it takes; 0: TurnInProgress at once)."""
        turn_wait = as_wait(wait)
        return self._blocking("run", lambda: self._turn(prompt, turn_wait))

    async def arun(self, prompt: str, *, wait: float | None = DEFAULT_WAIT) -> TurnResult:
        turn_wait = as_wait(wait)
        return await self._async(lambda: self._turn(prompt, turn_wait))

    def stream(self, prompt: str) -> Iterator[Any]:
        """One turn as it happens: ``for update in s.stream(prompt)`` yields what
        ``on_event`` is told (TextDelta, ev.ToolCall, ev.FileSnapshot, ev.ToolResult,
        ev.Usage …, in order) and the TurnResult last. Stopping early (``break``,
        closing the generator) cancels the turn; its error is raised from the loop."""
        refuse_inside_loop("Session.stream()", "`async for update in session.astream(...)`")
        self._refuse_if_released()
        return SessionStream(self, lambda: self._host.stream(prompt, self._session_id)).blocking()

    def astream(self, prompt: str) -> SessionStream:
        """``async for update in s.astream(prompt)`` (see ``stream``); use it with
        ``async with`` (or ``aclose()`` it) to cancel the turn when leaving early."""
        self._refuse_if_released()
        return SessionStream(self, lambda: self._host.stream(prompt, self._session_id))

    def compact(self, instructions: str | None = None) -> Any:
        """Summarise the older conversation: a CompactResult (``before``, ``after``:
        tokens; ``compacted``)."""
        return self._blocking("compact", self.acompact(instructions)._whole)

    def acompact(self, instructions: str | None = None) -> SessionStream:
        """``await`` it for the CompactResult, or ``async for`` it: its
        CompactionProgress, the CompactResult last."""
        self._refuse_if_released()
        return SessionStream(self, lambda: self._host.compact(instructions, self._session_id))

    def history(self, limit: int | None = None) -> list[dict]:
        """The session as the model sees it, in OpenAI chat format."""
        return self._blocking("history", lambda: self._host.history(self._session_id, limit))

    async def ahistory(self, limit: int | None = None) -> list[dict]:
        return await self._async(lambda: self._host.history(self._session_id, limit))

    def close(self) -> None:
        """End the session: running work is cancelled and the host released. No
        State: the Session is done (its log stays in the store). Closing again
        does nothing."""
        if self._phase == OPEN:
            self._release_blocking("close", lambda: self._release(CLOSED))

    async def aclose(self) -> None:
        if self._phase == OPEN:
            await self._release_async(lambda: self._release(CLOSED))

    def detach(self) -> State:
        """Park the idle session: release the host, cancelling nothing, and return
        the State to resume it with. TurnInProgress while a turn runs."""
        return self._release_blocking("detach", lambda: self._park(DETACHED))

    async def adetach(self) -> State:
        return await self._release_async(lambda: self._park(DETACHED))

    def stop(self) -> State:
        """Cancel what runs (a turn ends "cancelled", its log closed), release the
        host and return the State to resume the session with."""
        return self._release_blocking("stop", lambda: self._park(STOPPED))

    async def astop(self) -> State:
        return await self._release_async(lambda: self._park(STOPPED))

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- crossing to the loop the host lives on

    def _blocking(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        refuse_inside_loop(f"Session.{what}()", f"`await session.a{what}(...)`")
        self._refuse_if_released()
        return call(self._loop, make)

    async def _async(self, make: Callable[[], Awaitable[T]]) -> T:
        self._refuse_if_released()
        return await acall(self._loop, make)

    def _release_blocking(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        try:
            return self._blocking(what, make)
        finally:
            if self._phase != OPEN and self._thread is not None:
                self._thread.stop()

    async def _on_loop(self, make: Callable[[], Awaitable[T]]) -> T | None:
        """``make()`` on the host's loop, released or not; nothing once that loop
        is gone (closing the Session cancelled what ran there)."""
        if self._loop.is_closed():
            return None
        return await acall(self._loop, make)

    async def _release_async(self, make: Callable[[], Awaitable[T]]) -> T:
        try:
            return await self._async(make)
        finally:
            if self._phase != OPEN and self._thread is not None:
                if asyncio.get_running_loop() is self._loop:
                    self._thread.stop()  # from its own thread: does not wait
                else:
                    await asyncio.to_thread(self._thread.stop)

    # -- on the host's loop

    async def _turn(self, prompt: str, wait: Wait) -> TurnResult:
        self._refuse_if_released()
        self._turns += 1
        try:
            result = await self._host.send(prompt, self._session_id, wait=wait)
        except Exception:
            # A model error ends a turn after calls that cost; the error is what the
            # caller must see, so a failed recount is only logged.
            try:
                await self._recount(None)
            except Exception:
                log.warning("cannot total the cost of session %s", self._session_id, exc_info=True)
            raise
        finally:
            self._turns -= 1
        await self._recount(result)
        return result

    async def _recount(self, result: object) -> None:
        try:
            self._cost = await self._host.session_cost(self._session_id)
        except HostClosed:
            # stop() or close() closed the host as the turn wound down: add what it cost.
            if hasattr(result, "cost"):
                self._cost = _plus(self._cost, result.cost)

    def _turn_dropped(self) -> None:
        self._turns -= 1  # (on self._loop: a stream dropped mid-way, see streams.py)

    async def _settle(self, result: object) -> None:
        """After a streamed operation: the cost, counted again (a failure only logged:
        the operation's own outcome is what the caller sees)."""
        try:
            await self._recount(result)
        except Exception:
            log.warning("cannot total the cost of session %s", self._session_id, exc_info=True)

    async def _park(self, phase: str) -> State:
        self._refuse_if_released()
        if phase == DETACHED and self._turns:
            raise TurnInProgress(
                f"a turn is running in session {self._session_id!r}: detach() parks an "
                "idle session; wait for run() to return, or stop() to cancel the turn"
            )
        state = self._describe()  # may refuse: nothing is released yet
        if self._host.persistent and not self._turns:
            # A session with no turn yet is stored now, or its State would name nothing.
            await self._host.handle(self._session_id).store_opening()
        await self._release(phase)
        return state

    async def _release(self, phase: str) -> None:
        self._refuse_if_released()
        self._phase = phase
        await self._host.close()  # cancels running turns; each closes its log

    def _describe(self) -> State:
        if self._store is None:
            raise CapabilityUnsupported(
                "this store cannot be named in a State: it is a store object without a "
                "`url`; open the session with store=<a URL or folder> to park it, or close() it"
            )
        return State(
            session_id=self._session_id,
            store=self._store,
            workdir=str(self._host.workspace.roots[0]),
            model=self._host.model,
            approval=self._host.approval,
        )

    def _refuse_if_released(self) -> None:
        if self._phase == OPEN:
            return
        if self._phase == CLOSED:
            raise HostClosed(
                f"this Session was closed; its log stays in the store, and "
                f"agent_session(session_id={self._session_id!r}, store=...) opens it again"
            )
        verb = "detach" if self._phase == DETACHED else "stop"
        raise HostClosed(
            f"this Session was {self._phase}: go on with agent_resume(state), "
            f"passing the State {verb}() returned"
        )


class OpeningSession:
    """What ``aagent_session`` and ``aagent_resume`` return: ``await`` it for the
    Session, or use it with ``async with`` (which closes the Session at the end)."""

    def __init__(self, options: dict[str, Any], resume: bool | str) -> None:
        self._options = options
        self._resume = resume
        self._session: Session | None = None

    def __await__(self) -> Generator[Any, None, Session]:
        return open_async(self._options, self._resume).__await__()

    async def __aenter__(self) -> Session:
        self._session = await open_async(self._options, self._resume)
        return self._session

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.aclose()


def open_blocking(options: dict[str, Any], resume: bool | str, what: str) -> Session:
    """A Session whose host lives on a loop thread of its own."""
    refuse_inside_loop(f"{what}()", f"`async with a{what}(...)`")
    thread = LoopThread()
    try:
        host, cost = call(thread.loop, lambda: _open_host(options, resume))
    except BaseException:
        thread.stop()
        raise
    return Session(host, thread.loop, thread, _store_of(options, host), cost)


async def open_async(options: dict[str, Any], resume: bool | str) -> Session:
    """A Session whose host lives on the running loop."""
    host, cost = await _open_host(options, resume)
    return Session(host, asyncio.get_running_loop(), None, _store_of(options, host), cost)


async def _open_host(options: dict[str, Any], resume: bool | str) -> tuple[AgentHost, float | None]:
    """``resume``: True continues the named session (an unknown one starts empty);
    FROM_STATE continues one a State names, which must be stored."""
    # The engine loads with the first session, not with `import agent_host`.
    from ..session.host import AgentHost

    host = AgentHost(**options)
    try:
        if resume:
            state = await host.resume(host.session_id)  # finishes a restore a crash cut short
            if resume == FROM_STATE and state.head == 0:
                raise StateIncompatible(
                    f"this State's session {host.session_id!r} is not in its store: it "
                    "was deleted, or the store is another one; start a new session instead"
                )
        cost = await host.session_cost()
    except BaseException:
        await host.close()
        raise
    return host, cost


def _store_of(options: dict[str, Any], host: AgentHost) -> str | None:
    return store_url(options.get("store"), host.store, host.persistent)


def _plus(total: float | None, more: float | None) -> float | None:
    return None if total is None or more is None else total + more
