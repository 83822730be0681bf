"""AgentHost's operations on its current session wait their turn when asked
(``wait=``), as the handle under it queues them; a waiter that gives up or is
cancelled leaves the queue to the next."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent_host import AgentHost
from agent_host.session import events as ev
from agent_host.session.errors import TurnInProgress


@pytest.fixture
async def host(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "ok", "delay_ms": 60}] * 20}))
    ws = tmp_path / "ws"
    ws.mkdir()
    made = AgentHost(store="memory:", model=f"scripted:{script}", workdir=ws, auto_compact=None)
    yield made
    await made.close()


async def prompts(host: AgentHost) -> list[str]:
    return [e.text for e in await host.store.read(host.session_id) if type(e) is ev.UserPrompt]


async def test_sends_that_wait_run_in_arrival_order(host):
    first = asyncio.ensure_future(host.send("one"))
    await asyncio.sleep(0.02)
    with pytest.raises(TurnInProgress):
        await host.send("refused")
    rest = []
    for text in ("two", "three"):
        rest.append(asyncio.ensure_future(host.send(text, wait=True)))
        await asyncio.sleep(0.01)
    done = await asyncio.gather(first, *rest)
    assert [r.stop_reason for r in done] == ["end_turn"] * 3
    assert await prompts(host) == ["one", "two", "three"]
    assert host.cost == 0.0


async def test_a_waiter_cancelled_or_timed_out_leaves_the_queue_to_the_next(host):
    first = asyncio.ensure_future(host.send("one"))
    await asyncio.sleep(0.02)
    cancelled = asyncio.ensure_future(host.send("cancelled", wait=True))
    with pytest.raises(TurnInProgress, match="waited"):
        await host.send("too impatient", wait=0.01)
    last = asyncio.ensure_future(host.add_items([{"role": "user", "content": "x"}], wait=True))
    await asyncio.sleep(0.01)
    cancelled.cancel()
    await asyncio.gather(first, last)
    assert cancelled.cancelled()
    assert await prompts(host) == ["one", "x"]  # neither the cancelled nor the impatient
    await host.send("after", wait=0)  # free again: no wait needed
