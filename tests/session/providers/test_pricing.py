"""Prices per model, matching of dated and prefixed names, overrides."""

from __future__ import annotations

import pytest

from agent_host.session.pricing import PRICES, Price, cost, known_price, price_of


@pytest.mark.parametrize(
    ("model", "table_entry"),
    [
        ("openai/gpt-4.1", "gpt-4.1"),
        ("gpt-4.1", "gpt-4.1"),
        ("openai/gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),  # never plain gpt-4.1
        ("openai/gpt-4.1-nano", "gpt-4.1-nano"),
        ("openai/gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/o3", "o3"),
        ("openai/o3-mini-2025-01-31", "o3-mini"),
        ("openai/o4-mini-2025-04-16", "o4-mini"),
        ("anthropic/claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("anthropic/claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic/claude-opus-4-20250514", "claude-opus-4"),
        ("anthropic/claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("litellm_proxy/openai/gpt-4.1-mini", "gpt-4.1-mini"),
        ("litellm_proxy/claude-3-5-haiku-20241022", "claude-3-5-haiku"),
    ],
)
def test_names_match_the_right_entry(model, table_entry):
    assert price_of(model) == PRICES[table_entry]
    assert known_price(model)


def test_cost_is_per_million_tokens():
    assert cost("openai/gpt-4.1", 1_000_000, 0) == pytest.approx(2.00)
    assert cost("openai/gpt-4.1", 500_000, 250_000) == pytest.approx(1.00 + 2.00)
    assert cost("anthropic/claude-sonnet-4", 1000, 1000) == pytest.approx(0.003 + 0.015)


@pytest.mark.parametrize("model", ["scripted:/tmp/demo.json", "ollama/llama3.2", "ollama/qwen3:8b"])
def test_local_and_scripted_models_are_free(model):
    assert cost(model, 10**6, 10**6) == 0.0
    assert known_price(model)


@pytest.mark.parametrize("model", ["openai/gpt-4omni", "mystery/model", "openai/gpt-9", "o"])
def test_unknown_models_have_no_cost_rather_than_a_free_one(model):
    assert cost(model, 10**6, 10**6) is None
    assert not known_price(model)


def test_overrides_come_first_and_accept_config_shapes():
    overrides = {
        "openai/gpt-4.1": Price(1.0, 1.0),
        "my-model": (2.0, 4.0),
        "ollama/big": {"input": 1, "output": 3},
    }
    assert cost("openai/gpt-4.1-2025-04-14", 10**6, 10**6, overrides) == pytest.approx(2.0)
    assert cost("litellm_proxy/my-model", 10**6, 10**6, overrides) == pytest.approx(6.0)
    assert cost("ollama/big", 10**6, 0, overrides) == pytest.approx(1.0)
    assert known_price("litellm_proxy/my-model", overrides)
    # an override for one model leaves the others on the table
    assert cost("openai/gpt-4o", 10**6, 0, overrides) == pytest.approx(2.50)


def test_a_malformed_override_is_refused():
    with pytest.raises(ValueError, match="per million tokens"):
        cost("x/y", 1, 1, {"y": "cheap"})
