"""agent-host: an AI coding agent that editors and CI talk to over stdio."""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["AgentHost", "__version__"]

if TYPE_CHECKING:
    from .session.host import AgentHost


def __getattr__(name: str) -> object:
    # Imported on first use, so `agent-host --help` and the store stay light.
    if name == "AgentHost":
        from .session.host import AgentHost

        return AgentHost
    raise AttributeError(f"module 'agent_host' has no attribute {name!r}")
