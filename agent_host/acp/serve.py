"""``agent-host acp``: the agent over stdin/stdout until the client hangs up."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import acp
import attrs

from ..service import SessionService
from ..session.approval import Approval
from .agent import AcpAgent
from .port import AcpPort
from .wire import stdio_transport

if TYPE_CHECKING:
    from ..session.mcp import McpServerConfig

log = logging.getLogger(__name__)


@attrs.define
class AcpOptions:
    store: str | None = None
    model: str | None = None
    approval: Approval = "ask"
    mcp_servers: Sequence[McpServerConfig] = ()
    """From --mcp-config: every session's, unless the client names its own."""
    shell_environment: Mapping[str, Any] | None = None
    """From --shell-env: the environment policy (initialize's _meta may replace it)."""
    sandbox: str | None = None
    """From --sandbox: the sandbox mode (None: AGENT_HOST_SANDBOX, else
    workspace-write; initialize's _meta may replace it)."""
    model_limits: Mapping[str, Any] = attrs.field(factory=dict)
    """From --model-first-byte-timeout, --model-timeout, --model-total-timeout and
    --model-retries: AgentHost's ``model_*`` arguments (None or missing: the
    environment's, else the default; initialize's _meta may replace them)."""


async def serve_stdio(options: AcpOptions) -> None:
    """Serve one client on stdio; stdout carries the protocol and nothing else.

    Until the client is gone (wire.py): then the running turns are cancelled and
    the sessions closed, and this returns.
    """
    port = AcpPort()
    # Made before the connection: a bad store or model fails here, on stderr.
    service = SessionService(
        port,
        store=options.store,
        model=options.model,
        approval=options.approval,
        roots=[Path.cwd()],
        mcp_servers=list(options.mcp_servers) or None,
        shell_environment=options.shell_environment,
        sandbox=options.sandbox,
        **options.model_limits,
    )
    port.service = service
    agent = AcpAgent(service, port)
    try:
        # fork, resume and close are "unstable" in the SDK: off unless asked for.
        await acp.run_agent(agent, await stdio_transport(), use_unstable_protocol=True)
    finally:
        await agent.close()
        await service.shutdown()
