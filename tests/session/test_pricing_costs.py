"""What a turn costs: the provider's reported cost, else the price table, else
unknown (None, with one warning per model), and a session's total."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator

import attrs
import pytest

from agent_host.session import events as ev
from agent_host.session.approval import Gate
from agent_host.session.host import AgentHost
from agent_host.session.model import Finish, ModelEvent, ModelRequest, TextDelta, UsageReport
from agent_host.session.pricing import cost, total_cost
from agent_host.session.state import SessionState
from agent_host.session.store import open_store
from agent_host.session.turn import TurnSettings, run_turn
from agent_host.session.workspace import DiskWorkspace

from .providers.fakes import OPENAI_DONE, FakeServer, openai_chunk, sse

PRICING_LOG = "agent_host.session.pricing"


@attrs.define(eq=False)
class Answering:
    """A provider that answers every call with one text and a usage report."""

    model: str
    reported_cost: float | None = None
    calls: int = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        yield TextDelta("ok")
        yield UsageReport(1000, 100, cost=self.reported_cost)
        yield Finish("end_turn")

    async def close(self) -> None:
        return None


def unpriced_model() -> str:
    """A name no table knows, new each time: the warning is once per model and process."""
    return f"acme/unpriced-{uuid.uuid4().hex[:8]}"


async def turns(root, provider, prompts, prices=None):
    state = SessionState(store=open_store("memory:"), id="s1")
    settings = TurnSettings(
        provider=provider, workspace=DiskWorkspace([root]), gate=Gate("auto"), prices=prices
    )
    results = [await run_turn(state, prompt, settings) for prompt in prompts]
    return results, [e for e in state.events if type(e) is ev.Usage]


def unpriced_warnings(caplog, model):
    return [
        r
        for r in caplog.records
        if r.name == PRICING_LOG and r.levelno == logging.WARNING and model in r.getMessage()
    ]


async def test_a_model_no_one_prices_costs_unknown_and_warns_once(root, caplog):
    model = unpriced_model()
    caplog.set_level(logging.WARNING, logger=PRICING_LOG)
    results, usage = await turns(root, Answering(model), ["one", "two"])
    assert [r.cost for r in results] == [None, None]
    assert [u.cost for u in usage] == [None, None]
    assert total_cost(usage) is None
    [warning] = unpriced_warnings(caplog, model)
    # it says how to give the model a price
    assert "AgentHost(prices=" in warning.getMessage()
    assert "per million tokens" in warning.getMessage()


async def test_an_unknown_cost_is_not_summed_into_a_known_one(root):
    # one call priced by the provider, the next not: the turn's cost is unknown
    provider = Answering(unpriced_model(), reported_cost=0.5)
    (first,), _ = await turns(root, provider, ["one"])
    assert first.cost == pytest.approx(0.5)
    provider.reported_cost = None
    results, usage = await turns(root, provider, ["two"])
    assert results[0].cost is None and usage[0].cost is None


async def test_the_hosts_prices_price_a_model_the_table_lacks(root, caplog):
    model = unpriced_model()
    caplog.set_level(logging.WARNING, logger=PRICING_LOG)
    results, usage = await turns(root, Answering(model), ["one"], prices={model: (2.0, 10.0)})
    assert usage[0].cost == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1e6)
    assert results[0].cost == pytest.approx(usage[0].cost)
    assert not unpriced_warnings(caplog, model)


async def test_scripted_models_stay_free(root, tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [{"text": "hi"}]}))
    from agent_host.session.providers import open_provider

    results, usage = await turns(root, open_provider(f"scripted:{path}"), ["one"])
    assert results[0].cost == 0.0 and usage[0].cost == 0.0


async def test_the_cost_a_proxy_reports_wins_over_the_table(tmp_path, root, caplog, monkeypatch):
    # A real loopback server speaking the chat-completions stream, reporting usage.cost
    # as a LiteLLM proxy does; the model is in the table at another price.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = FakeServer(
        [
            sse(
                [
                    openai_chunk({"role": "assistant", "content": "Hello."}),
                    openai_chunk(finish="stop"),
                    openai_chunk(usage=(1000, 100), cost=0.0421),
                    OPENAI_DONE,
                ]
            )
        ]
    ).start()
    try:
        async with AgentHost(
            store="memory:",
            model="openai/gpt-4.1-mini",
            workdir=root,
            base_url=server.url + "/v1",
            api_key="sk-test-pricing",
            auto_compact=None,
        ) as host:
            result = await host.send("hi")
            [usage] = [e for e in await host.store.read(result.session_id) if type(e) is ev.Usage]
    finally:
        server.stop()
    assert cost("openai/gpt-4.1-mini", 1000, 100) != pytest.approx(0.0421)
    assert usage.cost == pytest.approx(0.0421)
    assert result.cost == pytest.approx(0.0421)


def test_total_cost_sums_usage_and_is_unknown_if_any_part_is():
    events = [
        ev.UserPrompt(text="x"),
        ev.Usage(input_tokens=1, output_tokens=1, cost=0.25),
        ev.AssistantMessage(text="y"),
        ev.Usage(input_tokens=1, output_tokens=1, cost=0.5),
    ]
    assert total_cost(events) == pytest.approx(0.75)
    assert total_cost(iter(events)) == pytest.approx(0.75)  # any iterable
    assert total_cost([]) == 0.0
    unknown = ev.Usage(input_tokens=1, output_tokens=1, cost=None)
    assert total_cost([*events, unknown]) is None
    assert total_cost([unknown, *events]) is None


async def test_the_host_reports_an_unknown_session_cost(root, caplog):
    model = unpriced_model()
    caplog.set_level(logging.WARNING, logger=PRICING_LOG)
    async with AgentHost(store="memory:", provider=Answering(model), workdir=root) as host:
        first = await host.send("one")
        second = await host.send("two")
        assert (first.cost, second.cost) == (None, None)
        assert host.cost is None and await host.session_cost() is None
    assert len(unpriced_warnings(caplog, model)) == 1
