"""``serve``, ``acp``, ``schema`` and ``demo``: in-process, no child server.

Each imports what it needs when it runs, so ``agent-host`` starts light.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import BinaryIO, cast

from .exit_codes import EXIT_OK
from .parser_limits import limits_of


def serve(args: argparse.Namespace) -> int:
    import gc

    # The server's imports (lsprotocol's ~550 classes above all) make objects that
    # live as long as the process: collecting while they are made finds nothing to
    # free and costs ~30 ms of the start-up (P5). Once made, they are frozen out of
    # the collector's sweeps, which saves tens of ms per full collection in turns.
    gc.disable()
    try:
        from ..server.app import create_server
        from ..server.stdio import ChunkedStdin

        server = create_server()
    finally:
        gc.freeze()
        gc.enable()
    # stdout carries the protocol: nothing else may write to it.
    stdin = ChunkedStdin(sys.stdin.buffer, on_eof=server.close_on_hang_up)
    # pygls types stdin as a BinaryIO; it calls only readline() and read(n).
    server.start_io(stdin=cast(BinaryIO, stdin), stdout=sys.stdout.buffer)
    return EXIT_OK


def check_acp(args: argparse.Namespace) -> str | None:
    """--mcp-config and --shell-env read and checked before anything starts: a
    problem is a usage error."""
    if args.mcp_config:
        from ..session.errors import McpConfigError
        from ..session.mcp import load_config_file

        try:
            args.mcp_servers = load_config_file(args.mcp_config)
        except McpConfigError as exc:
            return str(exc)
    if args.shell_env:
        from .run import load_shell_env

        return load_shell_env(args)
    return None


async def acp(args: argparse.Namespace) -> int:
    from ..acp import AcpOptions, serve_stdio

    options = AcpOptions(
        store=args.store,
        model=args.model,
        approval=args.approval,
        mcp_servers=args.mcp_servers,
        shell_environment=args.shell_environment,
        sandbox=args.sandbox,
        model_limits=limits_of(args),
    )
    await serve_stdio(options)
    return EXIT_OK


def schema(args: argparse.Namespace) -> int:
    if args.typescript:
        from ..rpc.typescript import typescript

        print(typescript(), end="")
        return EXIT_OK
    from ..rpc.schema import protocol_schema

    print(json.dumps(protocol_schema(), indent=2, ensure_ascii=False))
    return EXIT_OK


async def demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    await run_demo(args.store)
    return EXIT_OK
