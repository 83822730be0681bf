"""The bounds on a model call, through the real SDKs against a loopback server:
keep-alives (SSE comments, Anthropic's pings) every 0.2 s do not keep a call
alive past the idle bound, and a model that streams for ever meets the total one.
Each ends well within a generous multiple of its bound, and says which it was."""

from __future__ import annotations

import time

import pytest

from agent_host.session.model import TextDelta
from agent_host.session.providers import ModelTimeout, open_provider

from .conftest import FAKE_KEY
from .fakes import anthropic_event, anthropic_message_start, keep_alive, openai_chunk, sse
from .test_openai_compat import collect_until_error

pytestmark = pytest.mark.timeout(60)


def openai(server, **kwargs):
    return open_provider(
        "openai/gpt-4.1-mini", base_url=server.url + "/v1", api_key=FAKE_KEY, **kwargs
    )


async def timed(provider):
    started = time.monotonic()
    events, err = await collect_until_error(provider)
    return events, err, time.monotonic() - started


async def test_keep_alives_before_the_first_token_do_not_keep_a_call_alive(serve):
    server = serve(keep_alive([]))
    events, err, took = await timed(openai(server, timeout=1, max_retries=0))
    assert events == [] and took < 10
    assert isinstance(err, ModelTimeout) and err.bound == "idle"
    assert str(err) == (
        "openai/gpt-4.1-mini: the model sent nothing for 1 s (model idle timeout; "
        "--model-timeout, AGENT_HOST_MODEL_TIMEOUT, modelTimeout or model_timeout to change)"
    )


async def test_keep_alives_mid_answer_do_not_keep_a_call_alive(serve):
    server = serve(keep_alive([openai_chunk({"role": "assistant", "content": "Hel"})]))
    events, err, took = await timed(openai(server, timeout=1, max_retries=0))
    assert events == [TextDelta("Hel")] and took < 10
    assert isinstance(err, ModelTimeout) and err.bound == "idle"
    assert "the model sent nothing more for 1 s (model idle timeout" in str(err)


async def test_anthropic_pings_do_not_keep_a_call_alive(serve):
    pytest.importorskip("anthropic")
    ping = anthropic_event("ping")
    server = serve(keep_alive([anthropic_message_start(10), ping]))
    provider = open_provider(
        "anthropic/claude-sonnet-4", base_url=server.url, api_key=FAKE_KEY, timeout=1,
        max_retries=0,
    )  # fmt: skip
    events, err, took = await timed(provider)
    assert events == [] and took < 10
    assert isinstance(err, ModelTimeout) and err.bound == "idle"
    assert "anthropic/claude-sonnet-4: the model sent nothing more for 1 s" in str(err)


async def test_a_model_that_streams_for_ever_meets_the_total_bound(serve):
    server = serve(sse([openai_chunk({"content": "la "})] * 300, delay=0.2))
    events, err, took = await timed(openai(server, timeout=5, total_timeout=1, max_retries=0))
    assert 1 <= len(events) and took < 10
    assert isinstance(err, ModelTimeout) and err.bound == "total"
    assert str(err) == (
        "openai/gpt-4.1-mini: the model call took longer than 1 s in all (model total "
        "timeout; --model-total-timeout, AGENT_HOST_MODEL_TOTAL_TIMEOUT, modelTotalTimeout or "
        "model_total_timeout to change)"
    )


def test_bounds_are_checked_when_the_provider_is_opened():
    with pytest.raises(Exception, match="total_timeout must be a positive number"):
        open_provider("openai/m", api_key=FAKE_KEY, total_timeout=0)


async def test_agent_host_model_timeout_fails_the_turn_and_closes_its_log(serve, tmp_path):
    from agent_host.session import events as ev
    from agent_host.session.host import AgentHost
    from agent_host.session.providers import ModelConfigError

    server = serve(keep_alive([openai_chunk({"role": "assistant", "content": "Hel"})]))
    async with AgentHost(
        store="memory:", model="openai/gpt-4.1-mini", workdir=tmp_path, api_key=FAKE_KEY,
        base_url=server.url + "/v1", model_timeout=1, capture_commands=False,
    ) as host:  # fmt: skip
        started = time.monotonic()
        with pytest.raises(ModelTimeout, match="sent nothing more for 1 s") as caught:
            await host.send("hi")
        assert caught.value.bound == "idle" and time.monotonic() - started < 10
        events = await host.store.read(host.session_id)
        assert [type(e) for e in events[-2:]] == [ev.AssistantMessage, ev.TurnEnd]
        assert events[-1].stop_reason == "error" and events[-2].text == "Hel"
    for bad in (0, -1, float("nan"), True):
        with pytest.raises(ModelConfigError, match="model_timeout must be a positive number"):
            AgentHost(store="memory:", workdir=tmp_path, model_timeout=bad)
