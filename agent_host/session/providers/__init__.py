"""Model providers: ``open_provider("openai/gpt-4.1-mini")`` and the like.

A name is ``provider/model`` (or ``scripted:<path>``). The SDKs are imported only
when a provider that needs them is opened (see :mod:`.sdk`); ``anthropic`` is an
optional extra.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ..model import ModelProvider
from ..redaction import SECRETS
from .anthropic_messages import AnthropicProvider
from .errors import (
    Endpoint,
    ModelAuthError,
    ModelConfigError,
    ModelNotFound,
    ModelRateLimited,
    ModelRequestRejected,
    ModelStreamBroken,
    ModelTimeout,
    ModelUnavailable,
    ScriptExhausted,
)
from .openai_compat import OpenAICompatProvider
from .scripted import ScriptedProvider, open_scripted
from .sdk import SDK_TIMEOUT_MARGIN, import_sdk, open_client
from .streaming import MODEL_TIMEOUT, MODEL_TOTAL_TIMEOUT, RAW_ARGUMENTS_KEY

OLLAMA_DEFAULT_URL = "http://localhost:11434/v1"

SUPPORTED_FORMS = (
    "openai/<model> (OPENAI_API_KEY, OPENAI_BASE_URL)",
    "anthropic/<model> (ANTHROPIC_API_KEY; needs pip install 'agent-host[anthropic]')",
    "litellm_proxy/<model> (LITELLM_PROXY_API_BASE, LITELLM_PROXY_API_KEY)",
    f"ollama/<model> (OLLAMA_BASE_URL, default {OLLAMA_DEFAULT_URL})",
    "scripted:<path to a JSON script>",
)


def open_provider(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = MODEL_TIMEOUT,
    max_retries: int = 3,
    total_timeout: float | None = MODEL_TOTAL_TIMEOUT,
) -> ModelProvider:
    """The provider for ``model``. An explicit ``base_url``/``api_key`` wins over the
    environment. ``timeout`` is the idle bound (seconds the model may send nothing
    but keep-alives, the first token included), ``total_timeout`` the bound on a
    whole call (None: none). Raises :class:`ModelConfigError` (a ModelError) when
    it cannot be set up: unknown form, missing key, package or setting, bad script."""
    if model.startswith("scripted:"):
        return open_scripted(model, model.removeprefix("scripted:"))
    provider, _, name = model.partition("/")
    if not provider or not name:
        raise ModelConfigError(f"model {model!r} is not one of: {'; '.join(SUPPORTED_FORMS)}")
    if not timeout > 0:
        raise ModelConfigError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if total_timeout is not None and not total_timeout > 0:
        raise ModelConfigError(
            f"total_timeout must be a positive number of seconds, not {total_timeout!r}"
        )
    bounds = (timeout, max_retries, total_timeout)
    if max_retries < 0:
        raise ModelConfigError(f"max_retries must be 0 or more, not {max_retries!r}")
    if provider == "openai":
        return _open_openai(model, name, base_url, api_key, *bounds)
    if provider == "litellm_proxy":
        url = (base_url or os.environ.get("LITELLM_PROXY_API_BASE") or "").rstrip("/")
        if not url:
            raise ModelConfigError(
                f"{model}: set LITELLM_PROXY_API_BASE to the proxy's URL "
                "(e.g. http://localhost:4000) or pass base_url"
            )
        # Always an explicit key, so the SDK never falls back to OPENAI_API_KEY and
        # sends an OpenAI key to a proxy; a proxy without auth accepts any.
        real_key = api_key or os.environ.get("LITELLM_PROXY_API_KEY")
        key = real_key or "no-key"
        hint = "set LITELLM_PROXY_API_KEY to a key the proxy accepts (or pass api_key)"
        secrets = (real_key,) if real_key else ()  # a placeholder is no secret to mask
        endpoint = Endpoint(provider, name, url, hint, timeout, max_retries, secrets, total_timeout)
        return _open_compatible(model, endpoint, key)
    if provider == "ollama":
        url = _ollama_url(base_url or os.environ.get("OLLAMA_BASE_URL") or OLLAMA_DEFAULT_URL)
        url = url.rstrip("/")
        key = api_key or "ollama"  # the SDK insists on one; Ollama ignores it
        hint = "Ollama needs no key by default; check what sits in front of the server"
        secrets = (api_key,) if api_key else ()
        endpoint = Endpoint(provider, name, url, hint, timeout, max_retries, secrets, total_timeout)
        return _open_compatible(model, endpoint, key)
    if provider == "anthropic":
        return _open_anthropic(model, name, base_url, api_key, *bounds)
    raise ModelConfigError(
        f"unknown model provider {provider!r} in {model!r}; "
        f"use one of: {'; '.join(SUPPORTED_FORMS)}"
    )


def _open_openai(
    model: str,
    name: str,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    retries: int,
    total_timeout: float | None,
) -> OpenAICompatProvider:
    openai = import_sdk("openai", "pip install openai")
    client, endpoint = open_client(
        "openai",
        name,
        openai.AsyncOpenAI,
        refusals=(openai.OpenAIError,),
        refused=lambda _: f"{model}: no API key; set OPENAI_API_KEY or pass api_key",
        key_hint="set OPENAI_API_KEY (or pass api_key) to a valid key for this base URL",
        api_key=api_key,
        base_url=base_url,
        timeout=timeout,
        max_retries=retries,
        total_timeout=total_timeout,
    )
    # OpenAI's reasoning models (o3, o4-mini...) reject max_tokens.
    return OpenAICompatProvider(model, endpoint, client, token_limit_param="max_completion_tokens")


def _open_compatible(model: str, endpoint: Endpoint, key: str) -> OpenAICompatProvider:
    openai = import_sdk("openai", "pip install openai")
    client = openai.AsyncOpenAI(
        api_key=key,
        base_url=endpoint.base_url,
        timeout=endpoint.timeout + SDK_TIMEOUT_MARGIN,
        max_retries=endpoint.max_retries,
    )
    return OpenAICompatProvider(model, endpoint, client)


def _open_anthropic(
    model: str,
    name: str,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    retries: int,
    total_timeout: float | None,
) -> AnthropicProvider:
    anthropic = import_sdk("anthropic", "pip install 'agent-host[anthropic]'")

    def refused(exc: BaseException) -> str:
        # e.g. a credentials profile that is named but missing; the text names files,
        # not secrets
        return (
            f"{model}: no usable Anthropic credentials: set ANTHROPIC_API_KEY "
            f"(or pass api_key). The SDK said: {' '.join(SECRETS.mask(str(exc)).split())[:300]}"
        )

    client, endpoint = open_client(
        "anthropic",
        name,
        anthropic.AsyncAnthropic,
        refusals=(anthropic.AnthropicError, ValueError),
        refused=refused,
        key_hint="set ANTHROPIC_API_KEY (or pass api_key) to a valid key for this base URL",
        api_key=api_key,
        base_url=base_url,
        timeout=timeout,
        max_retries=retries,
        total_timeout=total_timeout,
    )
    return AnthropicProvider(model, endpoint, client)


def _ollama_url(url: str) -> str:
    """Ollama's OpenAI API lives under /v1; a bare host URL (as OLLAMA_HOST-style
    settings usually are) gets it added."""
    if urlsplit(url).path.strip("/") == "":
        return url.rstrip("/") + "/v1"
    return url


__all__ = [
    "MODEL_TIMEOUT",
    "MODEL_TOTAL_TIMEOUT",
    "OLLAMA_DEFAULT_URL",
    "RAW_ARGUMENTS_KEY",
    "SUPPORTED_FORMS",
    "AnthropicProvider",
    "Endpoint",
    "ModelAuthError",
    "ModelConfigError",
    "ModelNotFound",
    "ModelRateLimited",
    "ModelRequestRejected",
    "ModelStreamBroken",
    "ModelTimeout",
    "ModelUnavailable",
    "OpenAICompatProvider",
    "ScriptExhausted",
    "ScriptedProvider",
    "open_provider",
]
