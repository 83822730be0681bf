"""Model providers: ``open_provider("openai/gpt-4.1-mini")`` and the like.

A name is ``provider/model`` (or ``scripted:<path>``); the providers are the rows of
:data:`.registry.PROVIDERS`, each opened by its function in :mod:`.openers`. The
SDKs are imported only when a provider that needs them is opened (see :mod:`.sdk`);
``anthropic`` is an optional extra.
"""

from __future__ import annotations

from ..model import ModelProvider
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
from .openers import OLLAMA_DEFAULT_URL, Connection
from .registry import DEFAULT_MODEL, PROVIDERS, SUPPORTED_FORMS, Provider, provider_of
from .scripted import ScriptedProvider
from .streaming import MODEL_TIMEOUT, MODEL_TOTAL_TIMEOUT, RAW_ARGUMENTS_KEY


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
    row = provider_of(model)
    name = model.removeprefix(row.prefix) if row else ""
    if row is None or not name:
        head, slash, _ = model.partition("/")
        if row is None and slash and head:
            raise ModelConfigError(
                f"unknown model provider {head!r} in {model!r}; "
                f"use one of: {'; '.join(SUPPORTED_FORMS)}"
            )
        raise ModelConfigError(f"model {model!r} is not one of: {'; '.join(SUPPORTED_FORMS)}")
    if not timeout > 0:
        raise ModelConfigError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if total_timeout is not None and not total_timeout > 0:
        raise ModelConfigError(
            f"total_timeout must be a positive number of seconds, not {total_timeout!r}"
        )
    if max_retries < 0:
        raise ModelConfigError(f"max_retries must be 0 or more, not {max_retries!r}")
    return row.open(Connection(model, name, base_url, api_key, timeout, max_retries, total_timeout))


__all__ = [
    "DEFAULT_MODEL",
    "MODEL_TIMEOUT",
    "MODEL_TOTAL_TIMEOUT",
    "OLLAMA_DEFAULT_URL",
    "PROVIDERS",
    "RAW_ARGUMENTS_KEY",
    "SUPPORTED_FORMS",
    "AnthropicProvider",
    "Endpoint",
    "Connection",
    "ModelAuthError",
    "ModelConfigError",
    "ModelNotFound",
    "ModelRateLimited",
    "ModelRequestRejected",
    "ModelStreamBroken",
    "ModelTimeout",
    "ModelUnavailable",
    "OpenAICompatProvider",
    "Provider",
    "ScriptExhausted",
    "ScriptedProvider",
    "open_provider",
]
