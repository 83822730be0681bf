"""The model time limits' settings: where each value comes from (given > environment
> the provider's row > the default; per provider over for all), the forms a value
takes, and the arithmetic that keeps the defaults' promise -- a stalled endpoint is
an error within 60 s -- computed, not timed."""

from __future__ import annotations

import pytest

from agent_host.session.providers import ModelConfigError, open_provider
from agent_host.session.providers import limits as L
from agent_host.session.providers.registry import PROVIDERS

from .conftest import FAKE_KEY


def test_each_setting_has_one_flag_variable_and_wire_name_from_its_option():
    assert [(s.flag, s.env, s.wire, s.option) for s in L.SETTINGS] == [
        (
            "--model-first-byte-timeout",
            "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT",
            "modelFirstByteTimeout",
            "model_first_byte_timeout",
        ),
        ("--model-timeout", "AGENT_HOST_MODEL_TIMEOUT", "modelTimeout", "model_timeout"),
        (
            "--model-total-timeout",
            "AGENT_HOST_MODEL_TOTAL_TIMEOUT",
            "modelTotalTimeout",
            "model_total_timeout",
        ),
        ("--model-retries", "AGENT_HOST_MODEL_RETRIES", "modelRetries", "model_retries"),
    ]
    assert L.FIRST_BYTE.hint == (
        "--model-first-byte-timeout, AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT, "
        "modelFirstByteTimeout or model_first_byte_timeout to change"
    )


@pytest.mark.parametrize("row", PROVIDERS, ids=lambda p: p.prefix)
def test_the_defaults_report_a_stalled_endpoint_within_60_s_for_every_provider(row):
    scope = row.prefix.rstrip("/:")
    limits = L.resolve(scope, {}, {}, row.limits)
    assert limits.stall_bound() <= L.STALL_REPORTED_WITHIN


def test_the_stall_bound_is_every_attempt_and_the_longest_pauses_capped_by_the_total():
    assert L.Limits(15, 120, 1200, 2).stall_bound() == 3 * 15 + 0.5 + 1.0
    assert L.Limits(1, 120, 1200, 1).stall_bound() == 2 * 1 + 0.5
    # the idle bound counts from the request too: the nearer of the two
    assert L.Limits(30, 5, 1200, 0).stall_bound() == 5
    assert L.Limits(15, 120, 20, 2).stall_bound() == 20
    assert [L.longest_backoff(n) for n in range(1, 7)] == [0.5, 1, 2, 4, 8, 8]


def test_a_value_is_a_number_text_or_an_object_for_all_or_per_provider():
    assert L.parse(L.FIRST_BYTE, 20, "x") == {"*": 20.0}
    assert L.parse(L.FIRST_BYTE, "20", "x") == {"*": 20.0}
    assert L.parse(L.FIRST_BYTE, "20, ollama=90,openai/=5", "x") == {
        "*": 20.0,
        "ollama": 90.0,
        "openai": 5.0,
    }
    assert L.parse(L.FIRST_BYTE, {"*": 20, "anthropic": 30}, "x") == {
        "*": 20.0,
        "anthropic": 30.0,
    }
    assert L.parse(L.RETRIES, "0,ollama=3", "x") == {"*": 0, "ollama": 3}
    assert L.parse(L.FIRST_BYTE, None, "x") == {}


@pytest.mark.parametrize(
    ("setting", "value", "complaint"),
    [
        (L.FIRST_BYTE, 0, "AGENT_HOST_X must be a positive number of seconds"),
        (L.FIRST_BYTE, "soon", "must be a positive number of seconds"),
        (L.FIRST_BYTE, True, "must be a positive number"),
        (L.FIRST_BYTE, float("inf"), "must be a positive number"),
        (L.FIRST_BYTE, "", "must be a positive number"),
        (L.RETRIES, 1.5, "must be a whole number from 0 to 20"),
        (L.RETRIES, -1, "must be a whole number"),
        (L.FIRST_BYTE, "olama=9", "unknown provider 'olama'; use one of openai, anthropic"),
    ],
)
def test_a_bad_value_names_where_it_came_from(setting, value, complaint):
    with pytest.raises(ModelConfigError, match=complaint):
        L.parse(setting, value, "AGENT_HOST_X")


def test_given_beats_the_environment_and_per_provider_beats_for_all():
    env = L.from_environment(
        {
            "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT": "7,anthropic=8",
            "AGENT_HOST_MODEL_RETRIES": "4",
            "AGENT_HOST_MODEL_TIMEOUT": "",  # empty: unset
        }
    )
    flag = L.given({"first_byte_timeout": "3,ollama=9"})
    assert L.resolve("openai", flag, env).first_byte_timeout == 3  # flag over env
    assert L.resolve("ollama", flag, env).first_byte_timeout == 9  # per provider
    # the environment's value for this provider over the flag's for all
    assert L.resolve("anthropic", flag, env).first_byte_timeout == 8
    assert L.resolve("openai", {}, env).first_byte_timeout == 7  # env over default
    assert L.resolve("openai", flag, env).retries == 4
    assert L.resolve("openai", flag, env).timeout == L.IDLE.default


def test_a_providers_row_defaults_yield_to_what_the_user_sets():
    ollama = next(p for p in PROVIDERS if p.prefix == "ollama/")
    assert L.resolve("ollama", {}, {}, ollama.limits) == L.Limits(50, 120, 1200, 0)
    env = L.from_environment({"AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT": "2"})
    assert L.resolve("ollama", {}, env, ollama.limits).first_byte_timeout == 2
    assert L.resolve("openai", {}, {}, {}) == L.Limits(15, 120, 1200, 2)


def test_open_provider_reads_the_environment_and_an_explicit_value_wins(monkeypatch):
    monkeypatch.setenv("AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT", "2")
    monkeypatch.setenv("AGENT_HOST_MODEL_RETRIES", "openai=1")
    provider = open_provider("openai/m", api_key=FAKE_KEY)
    assert provider.endpoint.limits == L.Limits(2, 120, 1200, 1)
    provider = open_provider("openai/m", api_key=FAKE_KEY, first_byte_timeout={"openai": 4})
    assert provider.endpoint.limits.first_byte_timeout == 4
    monkeypatch.setenv("AGENT_HOST_MODEL_TIMEOUT", "never")
    with pytest.raises(ModelConfigError, match="AGENT_HOST_MODEL_TIMEOUT must be a positive"):
        open_provider("openai/m", api_key=FAKE_KEY)


def test_agent_host_checks_its_arguments_and_the_environment_when_made(monkeypatch, tmp_path):
    from agent_host.session.host import AgentHost

    with pytest.raises(ModelConfigError, match="model_retries must be a whole number"):
        AgentHost(store="memory:", workdir=tmp_path, model_retries=-1)
    with pytest.raises(ModelConfigError, match="model_first_byte_timeout: unknown provider"):
        AgentHost(store="memory:", workdir=tmp_path, model_first_byte_timeout={"nope": 1})
    monkeypatch.setenv("AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT", "0")
    with pytest.raises(ModelConfigError, match="AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT must be"):
        AgentHost(store="memory:", workdir=tmp_path)
