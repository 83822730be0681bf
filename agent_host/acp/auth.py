"""Authentication, ACP's way: keys come from the environment, so there is nothing to
log in to -- unless the model's provider has no key, which ``initialize`` then
offers as an auth method that says where to set it, and ``session/new`` answers
with ACP's "authentication required" until it is set."""

from __future__ import annotations

import os

from acp import RequestError
from acp import schema as s

from ..session.providers.errors import no_key
from ..session.providers.registry import PROVIDERS

AUTH_REQUIRED = -32000
"""ACP's "authentication required"."""

KEYS = {p.prefix: p.key_variable for p in PROVIDERS if p.key_required and p.key_variable}
"""Providers whose key the agent reads from its environment (others need none or
take it from their own variables, checked when the provider is opened)."""


def missing_key(model: str) -> str | None:
    """The variable the model's provider needs and the environment lacks."""
    for prefix, name in KEYS.items():
        if model.startswith(prefix) and not os.environ.get(name):
            return name
    return None


def auth_methods(model: str) -> list[s.EnvVarAuthMethod | s.TerminalAuthMethod | s.AuthMethodAgent]:
    name = missing_key(model)
    if name is None:
        return []
    return [
        s.AuthMethodAgent(
            id=f"env:{name}",
            name=f"Set {name}",
            description=f"agent-host reads the key for {model} from {name}: set it in the "
            "environment the editor starts `agent-host acp` in, then restart the agent",
        )
    ]


def authenticate(model: str, method_id: str) -> None:
    name = missing_key(model)
    if name is None:
        return  # the key is there: nothing to do
    raise RequestError(
        AUTH_REQUIRED,
        f"{name} is not set in agent-host's environment: set it where the editor starts "
        "`agent-host acp` (the agent cannot read it from the editor), then restart the agent",
        {"method": method_id},
    )


def require_key(model: str) -> None:
    """ACP's "authentication required" when the model cannot run for want of a key,
    its message naming the variable and where to set it: editors show the message
    (agent-shell: "Error (-32000) <message>") and hide ``data``."""
    name = missing_key(model)
    if name is not None:
        raise RequestError(AUTH_REQUIRED, no_key(model, name), {"missing": name, "model": model})
