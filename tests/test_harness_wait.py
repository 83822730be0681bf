"""The harness facades' run waits for a turn already running in the session, as a
second run of the session they mirror does (issue 24), bounded by ``wait``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_host import agent_session
from agent_host.session.errors import TurnInProgress

from .test_harness import PRICES, GatedProvider


@pytest.fixture
def opts(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return {"provider": GatedProvider(open=False), "store": str(tmp_path / "store"),
            "workdir": ws, "prices": PRICES}  # fmt: skip


def test_a_second_run_waits_for_the_first(opts):
    provider = opts["provider"]
    with agent_session(**opts) as s, ThreadPoolExecutor(2) as pool:
        first = pool.submit(s.run, "first")
        try:
            assert provider.started.wait(30)
            with pytest.raises(TurnInProgress, match=r"\(a turn\) in this process .*waited 0.2s"):
                s.run("refused", wait=0.2)
            with pytest.raises(TurnInProgress, match="in this process"):
                s.run("refused", wait=0)
            second = pool.submit(s.run, "second", wait=None)
        finally:
            provider.release.set()  # a failure above must not leave the first run hanging
        assert first.result(timeout=30).stop_reason == "end_turn"
        assert second.result(timeout=30).stop_reason == "end_turn"
        prompts = [m["content"] for m in s.history() if m["role"] == "user"]
        assert prompts == ["first", "second"]


async def test_arun_waits_too(opts):
    import asyncio

    from agent_host import aagent_session

    provider = opts["provider"]
    async with aagent_session(**opts) as s:
        first = asyncio.create_task(s.arun("first"))
        second = asyncio.create_task(s.arun("second"))
        await asyncio.to_thread(provider.started.wait, 30)
        provider.release.set()
        results = await asyncio.gather(first, second)
        assert [r.stop_reason for r in results] == ["end_turn", "end_turn"]
