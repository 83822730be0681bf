"""Model names, environment variables and explicit arguments in open_provider."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent_host.session.model import Finish, ModelRequest, TextDelta, UsageReport
from agent_host.session.providers import (
    OLLAMA_DEFAULT_URL,
    ModelConfigError,
    OpenAICompatProvider,
    open_provider,
)

from .conftest import FAKE_KEY
from .fakes import OPENAI_DONE, openai_chunk, sse

HELLO = [
    openai_chunk({"content": "hello"}),
    openai_chunk(finish="stop"),
    openai_chunk(usage=(3, 1)),
    OPENAI_DONE,
]
EXPECTED = [TextDelta("hello"), UsageReport(3, 1), Finish("end_turn")]
REQUEST = ModelRequest(messages=[{"role": "user", "content": "hi"}])


async def collect(provider) -> list:
    try:
        return [event async for event in provider.stream(REQUEST)]
    finally:
        await provider.close()


@pytest.mark.parametrize("model", ["gpt-4.1", "mystery/gpt-4.1", "/gpt-4.1", "openai/", "scripted"])
def test_unknown_forms_list_the_supported_ones(model):
    with pytest.raises(ModelConfigError) as caught:
        open_provider(model)
    message = str(caught.value)
    for form in (
        "openai/<model>",
        "anthropic/<model>",
        "litellm_proxy/<model>",
        "ollama/<model>",
        "scripted:<path",
    ):
        assert form in message


def test_openai_without_a_key_says_which_variable_to_set():
    with pytest.raises(ModelConfigError, match="set OPENAI_API_KEY"):
        open_provider("openai/gpt-4.1")


@pytest.mark.parametrize(
    ("kwargs", "complaint"), [({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries")]
)
def test_bad_limits_are_config_errors(kwargs, complaint):
    with pytest.raises(ModelConfigError, match=complaint):
        open_provider("openai/gpt-4.1", api_key=FAKE_KEY, **kwargs)


async def test_openai_reads_its_environment_like_the_sdk(serve, monkeypatch):
    server = serve(sse(HELLO))
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    assert await collect(open_provider("openai/gpt-4.1")) == EXPECTED
    assert server.received[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


async def test_explicit_arguments_win_over_the_environment(serve, monkeypatch):
    server = serve(sse(HELLO))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-not-this-one")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    provider = open_provider("openai/gpt-4.1", base_url=server.url + "/v1", api_key=FAKE_KEY)
    assert await collect(provider) == EXPECTED
    assert server.received[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_litellm_proxy_needs_its_base_url():
    with pytest.raises(ModelConfigError, match="LITELLM_PROXY_API_BASE"):
        open_provider("litellm_proxy/claude-sonnet-4")


async def test_litellm_proxy_uses_its_own_variables_never_openais(serve, monkeypatch):
    server = serve(sse(HELLO))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-must-not-leak-to-the-proxy")
    monkeypatch.setenv("LITELLM_PROXY_API_BASE", server.url)
    assert await collect(open_provider("litellm_proxy/anthropic/claude-sonnet-4")) == EXPECTED
    [received] = server.received
    assert received.body["model"] == "anthropic/claude-sonnet-4"
    assert "sk-openai" not in received.headers["authorization"]

    monkeypatch.setenv("LITELLM_PROXY_API_KEY", FAKE_KEY)
    await collect(open_provider("litellm_proxy/gpt-4.1"))
    assert server.received[1].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_ollama_defaults_to_localhost():
    provider = open_provider("ollama/llama3.2")
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.endpoint.base_url == OLLAMA_DEFAULT_URL
    assert provider.model == "ollama/llama3.2" and provider.endpoint.model == "llama3.2"


def test_ollama_base_url_keeps_an_explicit_path():
    provider = open_provider("ollama/qwen3:8b", base_url="http://gpu-box:11434/api/v1")
    assert provider.endpoint.base_url == "http://gpu-box:11434/api/v1"


def test_importing_the_package_imports_no_sdk():
    # openai is a core dependency but anthropic is optional: neither may load early
    code = (
        "import sys, agent_host, agent_host.session.providers, agent_host.session.pricing\n"
        "loaded = [m for m in ('openai', 'anthropic') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
