"""A second process on one session, for tests/test_agents_concurrency.py.

``add STORE SESSION NAME COUNT KIND``: open the session (``KIND`` ``ours``:
AgentHostSession, waiting as long as it takes; ``sdk``: the SDK's SQLiteSession),
print ``ready``, wait for a line on stdin, then add COUNT items ``NAME-i`` one
call each. ``hold STORE SESSION``: hold the session's turn lease until stdin closes.
"""

from __future__ import annotations

import asyncio
import sys


async def add(store: str, session_id: str, name: str, count: int, kind: str) -> None:
    if kind == "sdk":
        from agents import SQLiteSession

        session = SQLiteSession(session_id, store)
    else:
        from agent_host.agents import AgentHostSession

        session = AgentHostSession(session_id, store, wait=None)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    for i in range(count):
        await session.add_items([{"role": "user", "content": f"{name}-{i}"}])
    if kind == "sdk":
        session.close()
    else:
        await session.close()


async def hold(store: str, session_id: str) -> None:
    from agent_host.session import open_store

    checkpointer = open_store(store)
    async with checkpointer.turn_lease(session_id):
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.read)
    await checkpointer.close()


if __name__ == "__main__":
    what, *args = sys.argv[1:]
    if what == "add":
        asyncio.run(add(args[0], args[1], args[2], int(args[3]), args[4]))
    else:
        asyncio.run(hold(args[0], args[1]))
