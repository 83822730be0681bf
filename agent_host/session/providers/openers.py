"""How each provider is opened: one function per row of :data:`.registry.PROVIDERS`,
given a :class:`Connection` (the name after the prefix, explicit endpoint settings,
bounds) and returning a ModelProvider. The SDKs are imported only here, when a
provider that needs them is opened."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import attrs

from ..model import ModelProvider
from ..redaction import SECRETS
from .anthropic_messages import AnthropicProvider
from .errors import Endpoint, ModelConfigError, no_key, set_key
from .limits import Limits
from .openai_compat import OpenAICompatProvider
from .scripted import open_scripted
from .sdk import import_sdk, open_client, sdk_timeout

OLLAMA_DEFAULT_URL = "http://localhost:11434/v1"


@attrs.frozen
class Connection:
    """What opening a provider is given: the model's names and how to reach it."""

    model: str
    """The full name, ``openai/gpt-4.1-mini``."""
    name: str
    """What follows the provider's prefix: ``gpt-4.1-mini``, a script's path."""
    base_url: str | None
    """Explicit; wins over the environment. None: the provider's variable or default."""
    api_key: str | None
    """Explicit; wins over the environment."""
    limits: Limits
    """How long its calls may wait, and how often they are retried."""

    def endpoint(self, provider: str, url: str, hint: str, secrets: tuple[str, ...]) -> Endpoint:
        return Endpoint(provider, self.name, url, hint, self.limits, secrets)


def open_openai(c: Connection) -> OpenAICompatProvider:
    openai = import_sdk("openai", "pip install openai")
    client, endpoint = open_client(
        "openai",
        c.name,
        openai.AsyncOpenAI,
        refusals=(openai.OpenAIError,),
        refused=lambda _: no_key(c.model, "OPENAI_API_KEY"),
        key_hint=set_key("OPENAI_API_KEY", "a key valid for this base URL"),
        api_key=c.api_key,
        base_url=c.base_url,
        limits=c.limits,
    )
    # OpenAI's reasoning models (o3, o4-mini...) reject max_tokens.
    limit = "max_completion_tokens"
    return OpenAICompatProvider(c.model, endpoint, client, token_limit_param=limit)


def open_litellm_proxy(c: Connection) -> OpenAICompatProvider:
    url = (c.base_url or os.environ.get("LITELLM_PROXY_API_BASE") or "").rstrip("/")
    if not url:
        raise ModelConfigError(
            f"{c.model}: set LITELLM_PROXY_API_BASE to the proxy's URL "
            "(e.g. http://localhost:4000) or pass base_url"
        )
    # Always an explicit key, so the SDK never falls back to OPENAI_API_KEY and
    # sends an OpenAI key to a proxy; a proxy without auth accepts any.
    real_key = c.api_key or os.environ.get("LITELLM_PROXY_API_KEY")
    hint = set_key("LITELLM_PROXY_API_KEY", "a key the proxy accepts")
    secrets = (real_key,) if real_key else ()  # a placeholder is no secret to mask
    endpoint = c.endpoint("litellm_proxy", url, hint, secrets)
    return _open_compatible(c, endpoint, real_key or "no-key")


def open_ollama(c: Connection) -> OpenAICompatProvider:
    url = _ollama_url(c.base_url or os.environ.get("OLLAMA_BASE_URL") or OLLAMA_DEFAULT_URL)
    hint = "Ollama needs no key by default; check what sits in front of the server"
    secrets = (c.api_key,) if c.api_key else ()
    # the SDK insists on a key; Ollama ignores it
    return _open_compatible(c, c.endpoint("ollama", url, hint, secrets), c.api_key or "ollama")


def open_anthropic(c: Connection) -> AnthropicProvider:
    anthropic = import_sdk("anthropic", "pip install 'agent-host[anthropic]'")

    def refused(exc: BaseException) -> str:
        # e.g. a credentials profile that is named but missing; the text names files,
        # not secrets
        return (
            f"No usable Anthropic credentials for {c.model}: {set_key('ANTHROPIC_API_KEY')}. "
            f"The SDK said: {' '.join(SECRETS.mask(str(exc)).split())[:300]}"
        )

    client, endpoint = open_client(
        "anthropic",
        c.name,
        anthropic.AsyncAnthropic,
        refusals=(anthropic.AnthropicError, ValueError),
        refused=refused,
        key_hint=set_key("ANTHROPIC_API_KEY", "a key valid for this base URL"),
        api_key=c.api_key,
        base_url=c.base_url,
        limits=c.limits,
    )
    return AnthropicProvider(c.model, endpoint, client)


def open_script(c: Connection) -> ModelProvider:
    return open_scripted(c.model, c.name)


def _open_compatible(c: Connection, endpoint: Endpoint, key: str) -> OpenAICompatProvider:
    openai = import_sdk("openai", "pip install openai")
    client = openai.AsyncOpenAI(
        api_key=key,
        base_url=endpoint.base_url,
        timeout=sdk_timeout(endpoint.limits),
        max_retries=endpoint.max_retries,
    )
    return OpenAICompatProvider(c.model, endpoint, client)


def _ollama_url(url: str) -> str:
    """Ollama's OpenAI API lives under /v1; a bare host URL (as OLLAMA_HOST-style
    settings usually are) gets it added."""
    if urlsplit(url).path.strip("/") == "":
        return url.rstrip("/") + "/v1"
    return url.rstrip("/")
