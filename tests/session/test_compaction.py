"""Compaction: ``after`` is the history the model then sees, a compaction that would
not shrink it is not written, a re-compaction leaves one summary, and the summary's
model call is priced like a turn's."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator

import attrs
import pytest

from agent_host.session import events as ev
from agent_host.session.compaction import SUMMARY_PREFIX, compact_session, own_summary
from agent_host.session.conversation import estimate_tokens, summary_text, to_messages
from agent_host.session.host import AgentHost
from agent_host.session.model import Finish, ModelEvent, ModelRequest, TextDelta, UsageReport
from agent_host.session.state import SessionState
from agent_host.session.store import open_store


def long_text(tag: str, words: int = 300) -> str:
    return " ".join(f"{tag}{i}" for i in range(words))


def scripted(tmp_path, texts: list[str]) -> str:
    path = tmp_path / f"script-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps({"steps": [{"text": t} for t in texts]}))
    return f"scripted:{path}"


def summaries(messages: list[dict]) -> list[str]:
    return [
        m["content"]
        for m in messages
        if m["role"] == "user"
        and isinstance(m["content"], str)
        and m["content"].startswith(SUMMARY_PREFIX)
    ]


async def log_of(host: AgentHost) -> list[ev.Event]:
    return await host.store.read(host.session_id)


async def test_recompaction_reports_the_history_the_model_sees_and_keeps_one_summary(
    tmp_path, root
):
    model = scripted(tmp_path, [long_text("a"), long_text("b"), long_text("c")])
    async with AgentHost(store="memory:", model=model, workdir=root, auto_compact=None) as host:
        await host.send("one")
        await host.send("two")
        first = await host.compact()
        assert first.compacted and first.after == estimate_tokens(await host.history())
        await host.send("three")
        again = await host.compact()
        history = await host.history()
        events = await log_of(host)

    assert again.compacted and again.before > again.after
    assert again.after == estimate_tokens(history)
    assert [c.tokens_after for c in events if type(c) is ev.Compaction] == [
        first.after,
        again.after,
    ]
    [summary] = summaries(history)
    assert summary.count(SUMMARY_PREFIX) == 1, "summaries nest"
    assert [m["content"] for m in history[1:]] == ["three", long_text("c")]
    stored = [c.summary for c in events if type(c) is ev.Compaction]
    assert not any(s.startswith(SUMMARY_PREFIX) for s in stored)
    assert "one" in summary and "two" in summary  # the earlier summary was carried forward


async def test_a_compaction_that_would_not_shrink_the_history_is_not_written(tmp_path, root):
    # Short turns: the scripted summary is longer than what it would replace.
    model = scripted(tmp_path, ["a1", "a2"])
    async with AgentHost(store="memory:", model=model, workdir=root, auto_compact=None) as host:
        await host.send("one")
        await host.send("two")
        before = await log_of(host)
        result = await host.compact()
        assert await log_of(host) == before, "something was appended"
        history = await host.history()
    assert not result.compacted and result.after == result.before
    assert result.before == estimate_tokens(history)
    assert summaries(history) == []


@attrs.define(eq=False)
class Summariser:
    """Answers compaction calls with ``summary``; counts them."""

    summary: str
    model: str = "acme/summariser"
    reported_cost: float | None = None
    calls: list[ModelRequest] = attrs.field(factory=list)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        assert request.purpose == "compaction"
        self.calls.append(request)
        yield TextDelta(self.summary)
        yield UsageReport(2000, 50, cost=self.reported_cost)
        yield Finish("end_turn")

    async def close(self) -> None:
        return None


async def session(*texts: str) -> SessionState:
    """A session of prompts and answers, alternating, starting with a prompt."""
    state = SessionState(store=open_store("memory:"), id="s1")
    await state.append(
        [
            ev.UserPrompt(text=t) if i % 2 == 0 else ev.AssistantMessage(text=t)
            for i, t in enumerate(texts)
        ]
    )
    return state


async def test_a_second_compaction_with_nothing_new_asks_no_model():
    state = await session("one", long_text("a"), "two", "short")
    provider = Summariser("did one")
    assert (await compact_session(state, provider, None)).compacted
    head = state.head
    result = await compact_session(state, provider, None)
    assert not result.compacted and result.before == result.after
    assert len(provider.calls) == 1 and state.head == head


async def test_the_model_is_shown_the_previous_summary_and_an_echoed_heading_is_dropped():
    state = await session("one", long_text("a"), "two", long_text("b"), "three", "short")
    first = Summariser("did one")
    await compact_session(state, first, None)
    # two prompts later, the model echoes the history's heading, twice
    await state.append([ev.UserPrompt(text="four"), ev.AssistantMessage(text=long_text("d"))])
    echoing = Summariser(f"{summary_text('')} {SUMMARY_PREFIX}\n did one, then four")
    assert (await compact_session(state, echoing, None)).compacted
    [request] = echoing.calls
    assert request.messages[0] == {"role": "user", "content": summary_text("did one")}
    [compaction] = [e for e in state.events if type(e) is ev.Compaction][1:]
    assert compaction.summary == "did one, then four"
    history = to_messages(state.timeline)
    assert summaries(history) == [summary_text("did one, then four")]
    assert [m["content"] for m in history[1:]] == ["four", long_text("d")]


def test_own_summary_strips_the_heading_only_at_the_start():
    assert own_summary(f"  {SUMMARY_PREFIX}\n{SUMMARY_PREFIX} x {SUMMARY_PREFIX} ") == (
        f"x {SUMMARY_PREFIX}"
    )
    assert own_summary("plain") == "plain"


async def test_an_empty_summary_is_not_written():
    state = await session("one", long_text("a"), "two", "short")
    head = state.head
    result = await compact_session(state, Summariser("  "), None)
    assert not result.compacted and state.head == head


def test_a_later_compaction_from_seq_1_replaces_the_earlier_summary():
    # The fold that compact_session relies on: no second summary, no stale messages.
    events = [
        ev.UserPrompt(seq=1, text="one"),
        ev.AssistantMessage(seq=2, text="a1"),
        ev.UserPrompt(seq=3, text="two"),
        ev.AssistantMessage(seq=4, text="a2"),
        ev.Compaction(
            seq=5, summary="S1", first_seq=1, last_seq=2, tokens_before=0, tokens_after=0
        ),
        ev.UserPrompt(seq=6, text="three"),
        ev.AssistantMessage(seq=7, text="a3"),
        ev.Compaction(
            seq=8, summary="S2", first_seq=1, last_seq=5, tokens_before=0, tokens_after=0
        ),
    ]
    assert [m["content"] for m in to_messages(events)] == [summary_text("S2"), "three", "a3"]


def unpriced_warnings(caplog, model):
    return [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING and model in r.getMessage() and "prices" in r.getMessage()
    ]


@pytest.mark.parametrize(
    ("price", "reported", "expected"),
    [
        ((1.0, 4.0), None, (2000 * 1.0 + 50 * 4.0) / 1e6),  # the host's prices
        ((1.0, 4.0), 0.125, 0.125),  # the provider's own figure first
        (None, None, None),  # no one knows: unknown, and a warning
    ],
)
async def test_compactions_own_call_is_priced_like_a_turns(caplog, price, reported, expected):
    model = f"acme/compactor-{uuid.uuid4().hex[:8]}"
    prices = {model: price} if price else None
    state = await session("one", long_text("a"), "two", "short")
    caplog.set_level(logging.WARNING)
    provider = Summariser("did one", model=model, reported_cost=reported)
    assert (await compact_session(state, provider, None, prices=prices)).compacted
    [usage] = [e for e in state.events if type(e) is ev.Usage]
    assert usage.model == model and (usage.input_tokens, usage.output_tokens) == (2000, 50)
    if expected is None:
        assert usage.cost is None
        assert len(unpriced_warnings(caplog, model)) == 1
    else:
        assert usage.cost == pytest.approx(expected)
        assert not unpriced_warnings(caplog, model)


async def test_the_hosts_prices_price_its_compactions(tmp_path, root):
    model = f"acme/compactor-{uuid.uuid4().hex[:8]}"
    provider = Summariser("did one", model=model)
    async with AgentHost(
        store="memory:",
        provider=provider,
        workdir=root,
        prices={model: (1.0, 4.0)},
        auto_compact=None,
    ) as host:
        state = await session("one", long_text("a"), "two", "short")
        await host.add_items(to_messages(state.events))
        assert (await host.compact()).compacted
        [usage] = [e for e in await log_of(host) if type(e) is ev.Usage]
    assert usage.cost == pytest.approx((2000 * 1.0 + 50 * 4.0) / 1e6)


@attrs.define(eq=False)
class ToolLooper:
    """A turn of several model calls (a tool call each, then an answer), whose
    compaction summaries are longer than what they would replace."""

    steps: int
    model: str = "acme/looper"
    compactions: int = 0
    answered: int = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "compaction":
            self.compactions += 1
            yield TextDelta(long_text("summary", 2000))
            yield Finish("end_turn")
            return
        self.answered += 1
        if self.answered <= self.steps:
            from agent_host.session.model import ToolCallRequest

            yield ToolCallRequest(f"c{self.answered}", "list_files", {})
            yield Finish("tool_calls")
        else:
            yield TextDelta("done")
            yield Finish("end_turn")

    async def close(self) -> None:
        return None


async def test_a_turn_does_not_retry_a_compaction_that_could_not_shrink(root):
    provider = ToolLooper(steps=4)
    host = AgentHost(
        store="memory:", provider=provider, workdir=root, context_window=40, auto_compact=0.5
    )
    async with host:
        await host.send("one")
        provider.answered = 0
        result = await host.send("two")
    assert result.stop_reason == "end_turn"
    assert provider.compactions == 1  # five model calls in the turn, one compaction tried
