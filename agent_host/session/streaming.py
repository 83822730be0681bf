"""An operation on one session as a stream: the updates it reports, then its result.

``AgentHost.stream`` (a turn) and ``AgentHost.compact`` return an
:class:`UpdateStream`. ``await`` it for the result alone; ``async for`` it for
each update the operation reports -- what ``on_event`` is told: ``TextDelta``,
the events as they are logged (``ev.ToolCall``, ``ev.ToolResult``,
``ev.FileSnapshot``, ``ev.Usage`` …), ``CompactionProgress``, ``ModelWait`` --
and the result (a TurnResult, a CompactResult) as the last item.

Updates wait in a bounded queue: a consumer that falls behind holds the
operation up (back-pressure) rather than letting updates pile up. Stopping early
(``aclose()``, leaving ``async with``) cancels the operation, which closes its
log as a cancel does; an error of the operation is raised from the iterator.

Which updates are the operation's own is told by a context variable set in the
task that runs it (and so in the tasks it starts): another operation's updates on
the same session never reach this stream.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

import attrs

T = TypeVar("T")

QUEUE_SIZE = 256
"""Updates a stream holds before the operation waits for its consumer: a turn's
text deltas come in bursts, and a consumer printing them keeps up easily."""


@attrs.define(eq=False)
class _Tap:
    session_id: str
    queue: asyncio.Queue[Any]
    closed: bool = False

    async def __call__(self, item: object) -> None:
        if not self.closed:  # a consumer that left reads nothing more
            await self.queue.put(item)


TAP: contextvars.ContextVar[_Tap | None] = contextvars.ContextVar("agent_host_tap", default=None)
"""The stream the running operation reports to (None: only ``on_event``)."""


async def tap(session_id: str, item: object) -> None:
    """Hand ``item`` to the stream of the operation running here, if it has one
    and it is about ``session_id``."""
    current = TAP.get()
    if current is not None and current.session_id == session_id:
        await current(item)


@attrs.frozen
class _Outcome:
    result: Any = None
    error: BaseException | None = None


class UpdateStream(Generic[T], AsyncIterator[Any]):
    """See the module. One use: awaited, or iterated (once)."""

    def __init__(
        self, session_id: str, run: Callable[[], Awaitable[T]], maxsize: int = QUEUE_SIZE
    ) -> None:
        self._session_id = session_id
        self._run = run
        self._maxsize = maxsize
        self._tap: _Tap | None = None
        self._task: asyncio.Task[None] | None = None
        self._used = False
        self._finished = False

    @property
    def finished(self) -> bool:
        """Whether the last item (the result, or the error) was handed out, or the
        stream closed."""
        return self._finished

    def __await__(self) -> Generator[Any, None, T]:
        self._use()
        return self._run().__await__()  # no stream: updates reach on_event only

    def __aiter__(self) -> UpdateStream[T]:
        return self

    async def __anext__(self) -> Any:
        if self._finished:
            raise StopAsyncIteration
        if self._task is None:
            self._start()
        assert self._tap is not None
        item = await self._tap.queue.get()
        if not isinstance(item, _Outcome):
            return item
        self._finished = True
        if item.error is not None:
            raise item.error
        return item.result

    async def aclose(self) -> None:
        """Stop: an operation still running is cancelled (a turn closes its log,
        as on a cancel) and waited for. Closing again does nothing."""
        self._finished = True
        task, tap = self._task, self._tap
        if task is None or tap is None:
            self._used = True  # never started: nothing ran
            return
        tap.closed = True
        task.cancel()
        while not tap.queue.empty():  # a putter blocked on a full queue goes on
            tap.queue.get_nowait()
        await asyncio.gather(task, return_exceptions=True)

    async def __aenter__(self) -> UpdateStream[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # Dropped mid-way without aclose (a `break` out of a bare `async for`):
        # the operation must not wait forever on a queue nobody reads.
        task, tap = self._task, self._tap
        if task is not None and tap is not None and not task.done():
            tap.closed = True
            try:
                task.get_loop().call_soon_threadsafe(task.cancel)
            except RuntimeError:  # its loop is closed: nothing runs any more
                pass

    def _use(self) -> None:
        if self._used:
            raise RuntimeError("this stream was used already: an operation runs once")
        self._used = True

    def _start(self) -> None:
        self._use()
        self._tap = _Tap(self._session_id, asyncio.Queue(self._maxsize))
        context = contextvars.copy_context()
        context.run(TAP.set, self._tap)
        self._task = asyncio.get_running_loop().create_task(
            _pump(self._run, self._tap), context=context
        )


async def _pump(run: Callable[[], Awaitable[Any]], tap: _Tap) -> None:
    """Run the operation, then hand its outcome over as the last item. A function,
    not a method: the task must not keep the stream alive (see __del__)."""
    try:
        outcome = _Outcome(result=await run())
    except Exception as exc:
        outcome = _Outcome(error=exc)
    # The last item; it may wait for room like any update. Once the consumer
    # left, aclose() cancels this wait.
    if not tap.closed:
        await tap.queue.put(outcome)
