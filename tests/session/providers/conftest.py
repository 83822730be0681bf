"""Fixtures for the provider tests: loopback servers, and an environment with no
real credentials or endpoints in it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from .fakes import FakeServer, Responder

FAKE_KEY = "sk-test-FAKE0123456789abcdefSECRET"
"""Recognisable, so a test can prove it never shows up in an error."""

_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ADMIN_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_CUSTOM_HEADERS",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_PROFILE",
    "LITELLM_PROXY_API_BASE",
    "LITELLM_PROXY_API_KEY",
    "OLLAMA_BASE_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    # keep the anthropic SDK from finding credential profiles on this machine
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))


@pytest.fixture
def serve() -> Iterator[Callable[..., FakeServer]]:
    """``serve(responder, ...)``: a started loopback server playing those responses."""
    servers: list[FakeServer] = []

    def start(*responses: Responder) -> FakeServer:
        server = FakeServer(list(responses)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
