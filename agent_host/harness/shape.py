"""LiteLLM's call shape: ``agent_session(harness, sandbox=..., **options)``.

LiteLLM's harness API drives several agent runtimes (Claude Code, Codex …) in a
sandbox it is given. agent-host is one runtime, its own, and has no command
sandbox yet: its commands run as the user, in the workspace folder. The two
arguments are taken so that code written for LiteLLM runs unchanged where it can,
and is refused with a typed error where it would mean something agent-host does
not do.
"""

from __future__ import annotations

from typing import Any

from ..session.errors import CapabilityUnsupported
from .state import HARNESS

NO_SANDBOX = (None, "none", "full")
"""The ``sandbox=`` values that ask for nothing agent-host lacks: no sandbox
(``"full"``: full access, LiteLLM's name for running unconfined)."""

_OWN_NAMES = {HARNESS, "agent_host", "agenthost"}


def check_harness(harness: Any) -> None:
    """None or agent-host's own (``"agent-host"``, an enum whose value is it);
    CapabilityUnsupported for another harness."""
    if harness is None:
        return
    name = getattr(harness, "value", harness)
    if isinstance(name, str) and name.strip().lower() in _OWN_NAMES:
        return
    raise CapabilityUnsupported(
        f"agent-host runs its own harness, not {_named(harness)}: leave the harness out "
        f"(agent_session(model=...)) or pass {HARNESS!r}; to drive {_named(harness)}, "
        "use LiteLLM's own agent_session"
    )


def check_sandbox(sandbox: Any) -> None:
    """No sandbox (see NO_SANDBOX); CapabilityUnsupported for any other value."""
    if sandbox is None or (isinstance(sandbox, str) and sandbox in NO_SANDBOX):
        return
    raise CapabilityUnsupported(
        f"agent-host has no command sandbox yet, so sandbox={_named(sandbox)} cannot be "
        "honoured: its commands run as you, in the workspace folder. Run agent-host "
        "inside a container (or a VM) to confine it, and pass sandbox=None"
    )


def _named(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    name = getattr(value, "name", None)
    kind = type(value).__name__
    return f"{kind}.{name}" if isinstance(name, str) else f"a {kind}"
