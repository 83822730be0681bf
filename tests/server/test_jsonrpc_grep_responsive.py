"""A grep with a catastrophic pattern does not hold up the server's other requests.

``(a+)+$`` on 30 a's and a '!' backtracks for minutes in Python ``re``, holding the
GIL: session/list and session/cancel waited for it. Now RE2 matches it at once, and a
pattern only Python takes runs in a child process that is killed after 10 s.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from .conftest import request, start_agent, stop_agent, write_script


async def answer_times(client, turn: asyncio.Task) -> list[float]:
    times = []
    while not turn.done() or not times:
        started = time.monotonic()
        await request(client, "session/list", {}, timeout=30)
        times.append(time.monotonic() - started)
        await asyncio.sleep(0.05)
    return times


@pytest.mark.exclusive  # it times answers
async def test_session_list_is_answered_while_grep_runs(tmp_path, workspace, store_dir):
    (workspace / "a.txt").write_text("a" * 30 + "!\n")
    greps = [
        {"name": "grep", "arguments": {"pattern": "(a+)+$"}},
        # RE2 refuses the lookahead: Python re in the child, stopped by its time limit.
        {"name": "grep", "arguments": {"pattern": "(?=a)(a+)+$"}},
    ]
    steps = [{"tool_calls": [call]} for call in greps] + [{"text": "done"}]
    model = write_script(tmp_path / "script.json", steps)
    client = await start_agent(root=workspace, store=store_dir, model=model)
    try:
        turn = asyncio.create_task(request(client, "session/send", {"prompt": "go"}, timeout=60))
        await asyncio.sleep(0.2)
        times = await answer_times(client, turn)
        result = await turn
        assert result["stopReason"] == "end_turn"
        assert max(times) < 2.0, f"session/list waited {max(times):.1f} s"
        history = await request(client, "session/history", {"sessionId": result["sessionId"]})
        outputs = [item for item in map(str, history.values()) if "took too long" in item]
        assert outputs, "the fallback's time limit was not reported"
    finally:
        await stop_agent(client)
