"""The provider registry: one row per provider, read by everyone who needs to know
about providers (opening, the supported forms, secrets, pricing, ACP auth)."""

from __future__ import annotations

import pytest

from agent_host.acp.auth import KEYS
from agent_host.session.environment import DEFAULT_POLICY
from agent_host.session.pricing import FREE, price_of
from agent_host.session.providers import ModelConfigError, open_provider
from agent_host.session.providers.registry import (
    DEFAULT_MODEL,
    EXAMPLE_MODELS,
    PROVIDERS,
    provider_of,
)


def test_prefixes_are_unique_and_end_with_a_separator():
    prefixes = [p.prefix for p in PROVIDERS]
    assert len(set(prefixes)) == len(prefixes)
    assert all(p.endswith(("/", ":")) for p in prefixes)


@pytest.mark.parametrize("row", PROVIDERS, ids=lambda p: p.prefix)
def test_every_row_is_listed_where_a_name_is_refused(row):
    with pytest.raises(ModelConfigError) as caught:
        open_provider("mystery/model")
    assert row.form in str(caught.value)
    assert provider_of(row.prefix + "x") is row


@pytest.mark.parametrize("row", PROVIDERS, ids=lambda p: p.prefix)
def test_every_key_variable_is_kept_from_commands(row):
    for name in row.secret_variables:
        assert DEFAULT_POLICY.drops(name)
        assert name not in DEFAULT_POLICY.apply({name: "sk-x"})


@pytest.mark.parametrize("row", PROVIDERS, ids=lambda p: p.prefix)
def test_acp_asks_for_exactly_the_required_keys(row):
    assert KEYS.get(row.prefix) == (row.key_variable if row.key_required else None)


@pytest.mark.parametrize("row", PROVIDERS, ids=lambda p: p.prefix)
def test_free_rows_cost_nothing_and_examples_have_a_price(row):
    if row.free:
        assert price_of(row.prefix + "anything") == FREE
    for model in row.examples:
        assert provider_of(model) is row
        assert price_of(model) is not None, model


def test_the_default_model_is_an_example_of_a_row():
    assert DEFAULT_MODEL in EXAMPLE_MODELS
    assert provider_of(DEFAULT_MODEL) is not None
