"""run_task: a background task is held until it ends, and its failure is logged
with its name and traceback; cancellation is not a failure."""

from __future__ import annotations

import asyncio
import gc
import logging

from agent_host.session.tasks import run_task


async def test_a_failing_task_is_logged_with_its_name(caplog):
    caplog.set_level(logging.ERROR, logger="agent_host.session.tasks")

    async def fail() -> None:
        await asyncio.sleep(0)
        raise ValueError("what went wrong")

    task = run_task(fail(), name="telling the client")
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(0)  # the done callback runs on the next loop pass
    [record] = caplog.records
    assert "'telling the client' failed" in record.getMessage()
    assert record.exc_info is not None and str(record.exc_info[1]) == "what went wrong"


async def test_a_task_nobody_holds_runs_to_its_end():
    finished = asyncio.Event()

    async def slow() -> None:
        await asyncio.sleep(0.05)
        finished.set()

    run_task(slow(), name="unheld")  # the returned task is dropped at once
    gc.collect()
    await asyncio.wait_for(finished.wait(), 5)


async def test_kept_tasks_leave_the_set_and_cancellation_is_quiet(caplog):
    caplog.set_level(logging.ERROR, logger="agent_host.session.tasks")
    kept: set[asyncio.Task[None]] = set()
    task = run_task(asyncio.sleep(10), name="cancelled", keep=kept)
    assert kept == {task}
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(0)
    assert kept == set() and caplog.records == []
