"""LiteLLM's call shape: ``agent_session(harness, sandbox=..., **options)``.

LiteLLM's harness API drives several agent runtimes (Claude Code, Codex …) in a
sandbox it is given. agent-host is one runtime, its own, and confines its commands
itself (:mod:`agent_host.session.sandbox`): ``sandbox=`` names its policy. The two
arguments are taken so that code written for LiteLLM runs unchanged where it can,
and is refused with a typed error where it would mean something agent-host does
not do (a sandbox object such as a Docker box to run in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..session.errors import CapabilityUnsupported
from ..session.sandbox import SANDBOX_MODES, SandboxPolicy
from .state import HARNESS

NO_SANDBOX = ("none", "full")
"""The ``sandbox=`` names of running unconfined (``"full"``: full access)."""

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


def check_sandbox(sandbox: Any) -> Any:
    """AgentHost's ``sandbox=`` for the facades' ``sandbox=``: None (the default,
    workspace-write), a mode's name (``"none"`` is ``"full"``), the policy's JSON
    form or a SandboxPolicy; CapabilityUnsupported for anything else (a sandbox
    object to run in, an unknown name)."""
    if sandbox is None or isinstance(sandbox, SandboxPolicy | Mapping):
        return sandbox
    if isinstance(sandbox, str) and sandbox in NO_SANDBOX:
        return "full"
    if isinstance(sandbox, str) and sandbox in SANDBOX_MODES:
        return sandbox
    raise CapabilityUnsupported(
        f"agent-host confines its commands itself and cannot run in sandbox="
        f"{_named(sandbox)}: pass sandbox= one of {', '.join(SANDBOX_MODES)} (or None: "
        "workspace-write), or run agent-host inside that container yourself with "
        "sandbox='full'"
    )


def _named(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    name = getattr(value, "name", None)
    kind = type(value).__name__
    return f"{kind}.{name}" if isinstance(name, str) else f"a {kind}"
