"""Where a Session's AgentHost lives, and how calls from other threads reach it.

A session opened from sync code gets an event loop on a thread of its own, so it
can keep its host (store, model connections) across ``run`` calls and be used
from any thread. A session opened from async code lives on the loop that opened
it, so its callbacks (``permission``, ``on_event``) run where the caller's
objects live.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

DRAIN_SECONDS = 30.0
"""How long stop() lets calls in flight finish; the host is closed by then, so they
only wind down (a cancelled turn closing its log). Whatever is left is cancelled."""


class LoopThread:
    """An event loop running on a daemon thread until ``stop()``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="agent-host-session", daemon=True)
        self._stopping = False
        self._lock = threading.Lock()
        running = threading.Event()
        self.loop.call_soon(running.set)
        self._thread.start()
        running.wait()  # until then, a call would take the loop for an idle one

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            _wind_down(self.loop)

    def stop(self) -> None:
        """Stop once every call already submitted has finished, then close the loop.

        Safe to call more than once and from several threads; from the loop's own
        thread it does not wait (the thread cannot join itself)."""
        with self._lock:
            first, self._stopping = not self._stopping, True
        if first:
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed already
                return
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _drain(self) -> None:
        async def drain() -> None:
            me = asyncio.current_task()
            others = [t for t in asyncio.all_tasks() if t is not me]
            if others:
                await asyncio.wait(others, timeout=DRAIN_SECONDS)
            self.loop.stop()

        self.loop.create_task(drain())


def _wind_down(loop: asyncio.AbstractEventLoop) -> None:
    # What asyncio.run does after its main coroutine: nothing may outlive the loop.
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()


def refuse_inside_loop(what: str, instead: str) -> None:
    """RuntimeError if this thread runs an event loop: blocking it would freeze
    that loop (and deadlock, if it is the one the work must run on)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(f"{what} blocks, and this thread runs an event loop: use {instead}")


def call(loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[T]]) -> T:
    """Run ``make()`` on ``loop`` from sync code and wait for its result."""
    if loop.is_closed():
        raise RuntimeError("the event loop this session was opened on is closed")
    if not loop.is_running():
        # A loop that is idle between run_until_complete calls: drive it here.
        return loop.run_until_complete(make())
    future = asyncio.run_coroutine_threadsafe(_coroutine(make), loop)
    try:
        return future.result()
    except BaseException:
        # Interrupted (Ctrl-C): cancel the work, which ends a turn as "cancelled".
        future.cancel()
        raise


async def acall(loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[T]]) -> T:
    """Await ``make()`` run on ``loop``: directly if it is the running loop."""
    if asyncio.get_running_loop() is loop:
        return await make()
    if loop.is_closed() or not loop.is_running():
        raise RuntimeError(
            "the event loop this session was opened on is not running; "
            "use the session from that loop"
        )
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_coroutine(make), loop))


async def _coroutine(make: Callable[[], Awaitable[T]]) -> T:
    return await make()
