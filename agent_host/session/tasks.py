"""Background tasks that nobody awaits right away: kept until done, and their
failure logged with what they were.

asyncio keeps only a weak reference to a task, so one that nothing else holds can
be collected mid-flight; and an exception nobody retrieves surfaces, if at all, as
"Task exception was never retrieved" at garbage collection, long after and with no
name. (esbonio's ``run_task`` does the same.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

_RUNNING: set[asyncio.Task[Any]] = set()
"""Every task started here and not done yet: the reference that keeps it alive."""


def run_task(
    coro: Coroutine[Any, Any, T], *, name: str, keep: set[asyncio.Task[Any]] | None = None
) -> asyncio.Task[T]:
    """Start ``coro`` as a task called ``name`` on the running loop.

    The task is held until it ends (in ``keep`` when given, for a caller that
    cancels or awaits its tasks at close; else here); if it ends with an
    exception, that is logged with ``name`` and its traceback. Cancellation is
    not a failure.
    """
    held = _RUNNING if keep is None else keep
    task = asyncio.get_running_loop().create_task(coro, name=name)
    held.add(task)

    def finished(done: asyncio.Task[T]) -> None:
        held.discard(done)
        if done.cancelled():
            return
        exc = done.exception()
        if exc is not None:
            log.error("background task %r failed", done.get_name(), exc_info=exc)

    task.add_done_callback(finished)
    return task
