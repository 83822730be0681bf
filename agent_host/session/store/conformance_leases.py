"""The checkpointer contract: the turn lease, in this process and against another.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

import pytest

from agent_host.session.errors import TurnInProgress
from agent_host.session.store.base import Checkpointer


async def test_a_turn_lease_is_exclusive_and_released(store):
    async with store.turn_lease("s1"):
        with pytest.raises(TurnInProgress, match="s1"):
            async with store.turn_lease("s1"):
                pass
        async with store.turn_lease("other"):  # per session
            pass
    async with store.turn_lease("s1"):  # released on exit
        pass


async def test_a_lease_held_by_another_process_refuses_and_dies_with_it(backend):
    if not backend.durable:
        pytest.skip(f"{backend.name} lives in one process: no other process can hold a lease")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import asyncio, sys
                from agent_host.session import open_store
                async def main():
                    async with open_store({backend.url!r}).turn_lease("s1"):
                        print("held", flush=True)
                        sys.stdin.read()
                asyncio.run(main())
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TurnInProgress, match="another process"):
            async with backend.open().turn_lease("s1"):
                pass
    finally:
        holder.kill()  # a crash, not a clean release
        holder.wait(timeout=10)
    try:
        async with backend.open().turn_lease("s1"):
            pass
    finally:
        await backend.close_all()  # a server store's connections, in this test's loop


async def test_a_waiting_taker_gets_the_lease_once_it_is_released(store: Checkpointer) -> None:
    release = asyncio.Event()
    taken: list[str] = []

    async def holder() -> None:
        async with store.turn_lease("s1"):
            taken.append("first")
            await release.wait()

    async def waiter() -> None:
        async with store.turn_lease("s1", wait=True):
            taken.append("second")

    first = asyncio.ensure_future(holder())
    while not taken:
        await asyncio.sleep(0.001)
    second = asyncio.ensure_future(waiter())
    await asyncio.sleep(0.1)
    assert taken == ["first"] and not second.done()  # waiting, not refused
    release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert taken == ["first", "second"]
    async with store.turn_lease("s1"):  # the waiter released it too
        pass


async def test_a_bounded_wait_for_a_lease_ends_in_turn_in_progress(store):
    async with store.turn_lease("s1"):
        started = time.monotonic()
        with pytest.raises(TurnInProgress, match="s1"):
            async with store.turn_lease("s1", wait=0.2):
                pass
        waited = time.monotonic() - started
        assert 0.2 <= waited < 5
        with pytest.raises(TurnInProgress):  # no wait: refused at once, as always
            async with store.turn_lease("s1", wait=False):
                pass
    async with store.turn_lease("s1", wait=0.2):  # free: taken at once
        pass
    with pytest.raises(ValueError, match="wait"):
        async with store.turn_lease("s1", wait=-1):
            pass


async def test_a_lease_held_by_another_process_is_waited_for(backend):
    if not backend.durable:
        pytest.skip(f"{backend.name} lives in one process: no other process can hold a lease")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import asyncio, sys
                from agent_host.session import open_store
                async def main():
                    async with open_store({backend.url!r}).turn_lease("s1"):
                        print("held", flush=True)
                        sys.stdin.readline()
                    print("released", flush=True)
                    sys.stdin.read()
                asyncio.run(main())
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        store = backend.open()
        waiting = asyncio.ensure_future(_hold_briefly(store, wait=True))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # waiting for the other process, not refused
        holder.stdin.write("go\n")
        holder.stdin.flush()
        await asyncio.to_thread(holder.stdout.readline)
        await asyncio.wait_for(waiting, 10)
    finally:
        holder.kill()
        holder.wait(timeout=10)
        await backend.close_all()


async def _hold_briefly(store: Checkpointer, wait: bool | float) -> None:
    async with store.turn_lease("s1", wait=wait):
        pass
