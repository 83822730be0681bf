"""Model providers: ``open_provider("openai/gpt-4.1-mini")`` and the like.

A name is ``provider/model`` (or ``scripted:<path>``); the providers are the rows of
:data:`.registry.PROVIDERS`, each opened by its function in :mod:`.openers`. The
SDKs are imported only when a provider that needs them is opened (see :mod:`.sdk`);
``anthropic`` is an optional extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from ..model import ModelProvider
from . import limits
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
from .limits import Limits
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
    timeout: LimitValue = None,
    max_retries: LimitValue = None,
    total_timeout: LimitValue = None,
    first_byte_timeout: LimitValue = None,
    environ: Mapping[str, str] | None = None,
) -> ModelProvider:
    """The provider for ``model``. An explicit ``base_url``/``api_key`` wins over the
    environment. The time limits (see :mod:`.limits`): ``first_byte_timeout``
    (seconds an attempt waits for the response to begin), ``timeout`` (the idle
    bound: seconds the model may send nothing but keep-alives, the first token
    included), ``total_timeout`` (a whole call), ``max_retries``; each a number, or
    per provider (``"20,ollama=90"``, ``{"*": 20, "ollama": 90}``); None: the
    environment's (``AGENT_HOST_MODEL_*``), else the provider's default. Raises
    :class:`ModelConfigError` (a ModelError) when it cannot be set up: unknown form,
    missing key, package or setting, bad script or limit."""
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
    explicit = limits.given(
        {
            "first_byte_timeout": first_byte_timeout,
            "timeout": timeout,
            "total_timeout": total_timeout,
            "retries": max_retries,
        },
        names={"retries": "max_retries", "timeout": "timeout", "total_timeout": "total_timeout"},
    )
    scope = row.prefix.rstrip("/:")
    resolved = limits.resolve(scope, explicit, limits.from_environment(environ), row.limits)
    return row.open(Connection(model, name, base_url, api_key, resolved))


LimitValue: TypeAlias = "float | str | Mapping[str, Any] | None"
"""A time limit as given: a number, ``"20,ollama=90"`` or ``{"*": 20, "ollama": 90}``."""

__all__ = [
    "Limits",
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
