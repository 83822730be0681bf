"""A stalled endpoint -- a loopback server speaking HTTP that accepts every request
and never answers -- through the real ``openai`` SDK: each attempt ends at the
first-byte bound, is retried with backoff, and the caller hears of the wait and of
each retry (``ModelRequest.on_wait``); the error names the endpoint, how long it
waited and the setting that raises the limit. Through ``AgentHost(...)`` too, where
the waits reach the listener and not the log. Timed: ``exclusive``."""

from __future__ import annotations

import asyncio
import time

import attrs
import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost
from agent_host.session.model import ModelWait, TextDelta
from agent_host.session.providers import ModelTimeout, open_provider, streaming
from agent_host.session.providers import limits as L

from .conftest import FAKE_KEY
from .fakes import OPENAI_DONE, hang, openai_chunk, sse
from .test_openai_compat import REQUEST, collect_until_error

pytestmark = [pytest.mark.exclusive, pytest.mark.timeout(60)]

HINT = (
    "model first-byte timeout; --model-first-byte-timeout, "
    "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT, modelFirstByteTimeout or "
    "model_first_byte_timeout to change)"
)


def stalled_provider(server, **kwargs):
    return open_provider(
        "openai/gpt-4.1-mini", base_url=server.url + "/v1", api_key=FAKE_KEY, **kwargs
    )


async def run(provider):
    waits: list[ModelWait] = []

    async def on_wait(wait: ModelWait) -> None:
        waits.append(wait)

    started = time.monotonic()
    events, err = await collect_until_error(provider, attrs.evolve(REQUEST, on_wait=on_wait))
    return events, err, waits, time.monotonic() - started


async def test_a_stalled_endpoint_is_retried_told_and_reported_within_its_bound(serve):
    server = serve(hang)
    provider = stalled_provider(server, first_byte_timeout=0.5, max_retries=1)
    bound = provider.endpoint.limits.stall_bound()
    events, err, waits, took = await run(provider)
    assert events == []
    assert len(server.received) == 2  # the first attempt and its one retry
    assert 1 <= took < bound + 3, (took, bound)
    assert isinstance(err, ModelTimeout) and err.bound == "first_byte"
    url = f"{server.url}/v1"
    assert str(err).startswith(f"openai/gpt-4.1-mini: no answer from {url} within 0.5 s, 2 times (")
    assert str(err).endswith(f" s in all) ({HINT}")
    [retry] = waits
    assert (retry.attempt, retry.attempts, retry.waited) == (1, 2, 0.5)
    assert 0.375 <= retry.retry_in <= 0.5  # the first backoff, less its jitter
    assert retry.message == (
        "no answer from openai/gpt-4.1-mini in 0.5 s; retry 1 of 1 in "
        f"{L.seconds(retry.retry_in)} s"
    )


async def test_while_it_waits_the_caller_hears_so_every_so_often(serve, monkeypatch):
    monkeypatch.setattr(streaming, "WAIT_NOTICE_AFTER", 0.2)
    monkeypatch.setattr(streaming, "WAIT_NOTICE_EVERY", 0.3)
    server = serve(hang)
    events, err, waits, took = await run(
        stalled_provider(server, first_byte_timeout=1, max_retries=0)
    )
    assert isinstance(err, ModelTimeout) and took < 4
    # one attempt: no "times", no retry
    assert str(err) == (f"openai/gpt-4.1-mini: no answer from {server.url}/v1 within 1 s ({HINT}")
    assert len(waits) >= 2 and all(w.retry_in is None and w.attempt == 1 for w in waits)
    assert waits[0].message.startswith("no answer from openai/gpt-4.1-mini yet (0.")


async def test_an_answer_that_begins_in_time_is_not_a_wait(serve, monkeypatch):
    monkeypatch.setattr(streaming, "WAIT_NOTICE_AFTER", 0.05)
    chunks = [openai_chunk({"content": "hi"}), openai_chunk(finish="stop"), OPENAI_DONE]
    server = serve(sse(chunks))
    provider = stalled_provider(server, first_byte_timeout=5)
    waits: list[ModelWait] = []

    async def on_wait(wait: ModelWait) -> None:
        waits.append(wait)

    try:
        got = [e async for e in provider.stream(attrs.evolve(REQUEST, on_wait=on_wait))]
    finally:
        await provider.close()
    assert got[0] == TextDelta("hi") and waits == []


async def test_agent_host_reports_the_waits_to_its_listener_not_its_log(serve, tmp_path):
    server = serve(hang)
    heard: list[object] = []
    async with AgentHost(
        store="memory:", model="openai/gpt-4.1-mini", workdir=tmp_path, api_key=FAKE_KEY,
        base_url=server.url + "/v1", model_first_byte_timeout="0.5,anthropic=30",
        model_retries=1, capture_commands=False,
        on_event=lambda _sid, item: heard.append(item),
    ) as host:  # fmt: skip
        started = time.monotonic()
        with pytest.raises(ModelTimeout, match="within 0.5 s, 2 times") as caught:
            await host.send("hi")
        assert time.monotonic() - started < 2 * 0.5 + 0.5 + 3
        assert "model_first_byte_timeout to change" in str(caught.value)
        events = await host.store.read(host.session_id)
    waits = [h for h in heard if isinstance(h, ModelWait)]
    assert [w.message.split(";")[1].split(" in ")[0] for w in waits] == [" retry 1 of 1"]
    assert isinstance(events[-1], ev.TurnEnd) and events[-1].stop_reason == "error"
    assert not any("no answer" in str(ev.to_dict(e)) for e in events)


async def test_a_cancel_while_it_waits_ends_the_call_at_once(serve, tmp_path):
    server = serve(hang)
    waited = asyncio.Event()

    def heard(_sid: str, item: object) -> None:
        if isinstance(item, ModelWait):
            waited.set()

    async with AgentHost(
        store="memory:", model="openai/gpt-4.1-mini", workdir=tmp_path, api_key=FAKE_KEY,
        base_url=server.url + "/v1", model_first_byte_timeout=0.5, model_retries=5,
        capture_commands=False, on_event=heard,
    ) as host:  # fmt: skip
        turn = asyncio.create_task(host.send("hi"))
        await asyncio.wait_for(waited.wait(), 10)  # the first retry is announced
        started = time.monotonic()
        assert await host.cancel()
        result = await asyncio.wait_for(turn, 5)
        assert result.stop_reason == "cancelled" and time.monotonic() - started < 2


async def test_a_retrys_wait_counts_from_the_call_and_says_which_attempt(serve, monkeypatch):
    monkeypatch.setattr(streaming, "WAIT_NOTICE_AFTER", 0.2)
    monkeypatch.setattr(streaming, "WAIT_NOTICE_EVERY", 10)
    server = serve(hang)
    _, err, waits, _ = await run(stalled_provider(server, first_byte_timeout=1, max_retries=1))
    assert isinstance(err, ModelTimeout) and "within 1 s, 2 times" in str(err)
    first, retry, second = waits
    assert (first.attempt, first.retry_in) == (1, None) and "attempt" not in first.message
    assert retry.retry_in is not None and "retry 1 of 1" in retry.message
    assert (second.attempt, second.retry_in) == (2, None)
    assert second.waited > 1.2 and second.message.endswith("; attempt 2 of 2")
