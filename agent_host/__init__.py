"""agent-host: an AI coding agent that editors and CI talk to over stdio."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# name -> the module it lives in, imported on first use, so `agent-host --help`
# and the store stay light.
_LAZY = {
    "AgentHost": ".session.host",
    "StateIncompatible": ".session.errors",
    "Session": ".harness",
    "State": ".harness",
    "agent": ".harness",
    "aagent": ".harness",
    "agent_session": ".harness",
    "aagent_session": ".harness",
    "agent_resume": ".harness",
    "aagent_resume": ".harness",
}

__all__ = ["__version__", *_LAZY]

if TYPE_CHECKING:  # `X as X`: re-exported, for type checkers and linters
    from .harness import Session as Session
    from .harness import State as State
    from .harness import aagent as aagent
    from .harness import aagent_resume as aagent_resume
    from .harness import aagent_session as aagent_session
    from .harness import agent as agent
    from .harness import agent_resume as agent_resume
    from .harness import agent_session as agent_session
    from .session.errors import StateIncompatible as StateIncompatible
    from .session.host import AgentHost as AgentHost


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_host' has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
