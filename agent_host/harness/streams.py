"""A Session's turn (or compaction) as a stream, from the caller's loop or thread.

The operation runs on the loop the Session's host lives on (see loop.py); each
item is fetched from there when the caller asks for it, so a caller that reads
slowly holds the operation up (the host's bounded queue) and one that stops
early cancels it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

from .loop import call

if TYPE_CHECKING:
    from ..session.streaming import UpdateStream
    from .session import Session

_END = object()


class SessionStream:
    """``async for item in session.astream(prompt)``: the turn's updates and its
    TurnResult last; ``await`` it for the result alone. ``aclose()`` (or leaving
    ``async with``) cancels what still runs."""

    def __init__(self, session: Session, make: Callable[[], UpdateStream[Any]]) -> None:
        self._session = session
        self._make = make
        self._inner: UpdateStream[Any] | None = None
        self._running = False

    def __await__(self) -> Generator[Any, None, Any]:
        return self._session._async(self._whole).__await__()

    def __aiter__(self) -> SessionStream:
        return self

    async def __anext__(self) -> Any:
        item = await self._session._async(self._next)
        if item is _END:
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._session._on_loop(self._close)

    async def __aenter__(self) -> SessionStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # Dropped mid-way without aclose (a `break` out of a bare `async for`): the
        # host's stream cancels the turn as it goes; the Session stops counting it.
        if not self._running:
            return
        self._running = False
        loop = self._session._loop
        try:
            here = asyncio.get_running_loop() is loop
        except RuntimeError:
            here = False
        if here:
            self._session._turns -= 1
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._session._turn_dropped)

    def blocking(self) -> Iterator[Any]:
        """The same, for sync code (a generator: closing it cancels what runs)."""
        try:
            while True:
                item = self._session._blocking("stream", self._next)
                if item is _END:
                    return
                yield item
        finally:
            if self._inner is not None and not self._session._loop.is_closed():
                call(self._session._loop, self._close)

    # -- on the host's loop

    async def _whole(self) -> Any:
        self._begin()
        assert self._inner is not None
        try:
            result = await self._inner
        except Exception:
            await self._end(None)
            raise
        await self._end(result)
        return result

    async def _next(self) -> Any:
        if self._inner is None:
            self._begin()
        elif not self._running:
            return _END
        assert self._inner is not None
        try:
            item = await self._inner.__anext__()
        except StopAsyncIteration:
            await self._end(None)
            return _END
        except Exception:
            await self._end(None)
            raise
        if self._inner.finished:  # the result, the last item
            await self._end(item)
        return item

    def _begin(self) -> None:
        self._session._refuse_if_released()
        self._inner = self._make()
        self._running = True
        self._session._turns += 1

    async def _close(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()
        await self._end(None)

    async def _end(self, result: Any) -> None:
        if not self._running:
            return
        self._running = False
        self._session._turns -= 1
        await self._session._settle(result)
