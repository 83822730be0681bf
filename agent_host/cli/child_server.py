"""Talking to a child ``agent-host serve`` over stdio (``agent_host.client``).

``agent_host.client`` is imported when a command runs, not when the CLI loads.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..session.redaction import mask
from .parser_limits import limits_of


def make_client(args: argparse.Namespace, **kw: Any) -> Any:
    """An ``AgentClient`` for the command's --store/--model/--workspace/-v."""
    from ..client import AgentClient

    return AgentClient(
        store=args.store,
        model=getattr(args, "model", None),
        workspace=getattr(args, "workspace", None),
        verbose=args.verbose,
        mcp_servers=getattr(args, "mcp_servers", None),
        model_limits=limits_of(args),
        on_message=lambda text: print(mask(text), file=sys.stderr),
        **kw,
    )


async def call_server(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    """One request to a fresh child server; errors keep the child's stderr tail."""
    from ..client import ServerError

    client = make_client(args)
    try:
        await client.start()
        result = await client.request(method, params)
    except ServerError as exc:
        exc.stderr_tail = client.stderr_tail()  # type: ignore[attr-defined]
        raise
    finally:
        await client.close()
    check_exit(client)
    return result


def check_exit(client: Any) -> None:
    """A child that crashed or hung on the way out: say so, with what it last said."""
    if client.clean_exit:
        return
    print(
        f"agent-host: warning: the server did not exit cleanly (code {client.exit_code})",
        file=sys.stderr,
    )
    for line in client.stderr_tail():
        print(f"  {mask(line)}", file=sys.stderr)
