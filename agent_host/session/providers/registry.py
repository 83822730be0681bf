"""Every model provider agent-host can open, one row each.

A row says everything the rest of agent-host needs to know about a provider: the
prefix a model name starts with, the function that opens it, the variables it reads
its key and base URL from, the pip extra it needs, example models. Who reads it:
``open_provider`` (which row opens a name), ``SUPPORTED_FORMS`` (the error that
lists them, the CLI's help), ACP's auth (whose key must be set), the environment
policy (whose keys commands never see), pricing (who is free), ACP's model menu
(the examples). Adding a provider is adding a row (and its opener)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from ..model import ModelProvider
from .openers import (
    OLLAMA_DEFAULT_URL,
    Connection,
    open_anthropic,
    open_litellm_proxy,
    open_ollama,
    open_openai,
    open_script,
)


@attrs.frozen
class Provider:
    prefix: str
    """What a model name starts with: ``openai/``, ``scripted:``."""
    open: Callable[[Connection], ModelProvider]
    """Opens the provider; ModelConfigError when it cannot be set up."""
    placeholder: str = "<model>"
    """What follows the prefix, as the supported forms show it."""
    key_variable: str | None = None
    """The environment variable holding the API key, if it reads one."""
    key_required: bool = False
    """Whether the provider cannot run without ``key_variable`` (ACP then offers to
    authenticate); False for one whose key is optional or found elsewhere."""
    base_url_variable: str | None = None
    default_base_url: str | None = None
    extra: str | None = None
    """The ``agent-host[...]`` extra its SDK comes in, if not a base dependency."""
    examples: tuple[str, ...] = ()
    """Full model names worth offering in a model menu."""
    other_secrets: tuple[str, ...] = ()
    """More variables its SDK reads credentials from: hidden from commands too."""
    free: bool = False
    """Costs nothing to call (a local model, a script)."""
    limits: Mapping[str, float] = attrs.field(factory=dict)
    """Its own defaults of the time limits (:mod:`.limits`), by setting name, where
    the general ones do not fit it."""

    @property
    def form(self) -> str:
        """``anthropic/<model> (ANTHROPIC_API_KEY, ...; needs pip install ...)``."""
        variables = [v for v in (self.key_variable, self.base_url_variable) if v]
        if self.default_base_url:
            variables.append(f"default {self.default_base_url}")
        notes = ", ".join(variables)
        if self.extra:
            needs = f"needs pip install 'agent-host[{self.extra}]'"
            notes = f"{notes}; {needs}" if notes else needs
        return f"{self.prefix}{self.placeholder}" + (f" ({notes})" if notes else "")

    @property
    def secret_variables(self) -> tuple[str, ...]:
        return tuple(v for v in (self.key_variable, *self.other_secrets) if v)


PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "openai/",
        open_openai,
        key_variable="OPENAI_API_KEY",
        key_required=True,
        base_url_variable="OPENAI_BASE_URL",
        examples=("openai/gpt-4.1", "openai/gpt-4.1-mini", "openai/gpt-5"),
        other_secrets=("OPENAI_ADMIN_KEY",),
    ),
    Provider(
        "anthropic/",
        open_anthropic,
        key_variable="ANTHROPIC_API_KEY",
        key_required=True,
        base_url_variable="ANTHROPIC_BASE_URL",
        extra="anthropic",
        examples=("anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5"),
        other_secrets=("ANTHROPIC_AUTH_TOKEN",),
    ),
    Provider(
        "litellm_proxy/",
        open_litellm_proxy,
        key_variable="LITELLM_PROXY_API_KEY",
        base_url_variable="LITELLM_PROXY_API_BASE",
        other_secrets=("LITELLM_API_KEY", "LITELLM_MASTER_KEY"),
    ),
    Provider(
        "ollama/",
        open_ollama,
        base_url_variable="OLLAMA_BASE_URL",
        default_base_url=OLLAMA_DEFAULT_URL,
        free=True,
        # A local server loads the model before it answers (tens of seconds for a
        # large one); retrying a local server that stalls rarely helps.
        limits={"first_byte_timeout": 50.0, "retries": 0},
    ),
    Provider("scripted:", open_script, placeholder="<path to a JSON script>", free=True),
)

DEFAULT_MODEL = "openai/gpt-4.1-mini"
"""The model a server, a host or a session uses when nobody names one."""

SUPPORTED_FORMS: tuple[str, ...] = tuple(p.form for p in PROVIDERS)
EXAMPLE_MODELS: tuple[str, ...] = tuple(m for p in PROVIDERS for m in p.examples)
PROVIDER_KEYS: tuple[str, ...] = tuple(v for p in PROVIDERS for v in p.secret_variables)
"""Every variable a provider reads a key from."""
FREE_PREFIXES: tuple[str, ...] = tuple(p.prefix for p in PROVIDERS if p.free)


def provider_of(model: str) -> Provider | None:
    """The row whose prefix ``model`` starts with."""
    return next((p for p in PROVIDERS if model.startswith(p.prefix)), None)
