"""The ``agent-host`` command.

``serve`` is the stdio server editors and CI talk to. ``run``, ``history``,
``checkpoints``, ``restore``, ``undo-restore``, ``compact`` and ``delete`` drive
``agent-host serve`` as a child process over stdio (``agent_host.client``) -- the
same path a CI job takes. ``sessions`` and ``gc`` work on the store directly (they
need no model and no workspace, and gc has no protocol method); ``schema`` prints
the protocol's JSON Schema; ``demo`` runs an offline session in-process.

Exit codes: 0 success; 1 a failed command or turn (an error from the server, a
turn that stopped for any reason but end_turn, the server dying); 2 a usage
error; 130 interrupted (Ctrl-C: a running turn is cancelled first, so its session
stays whole).

The package, by seam:

- ``parser``: the argparse tree, each subcommand bound to its function
- ``run``: the ``run`` command -- one turn, Ctrl-C, the permission prompts
- ``turn_output``: how ``run`` prints a turn (text or JSON lines)
- ``session_commands``: history, checkpoints, restore, undo-restore, compact, delete
- ``child_server``: one request to a child ``agent-host serve``, its exit checked
- ``store_commands``: sessions and gc, on the store in-process
- ``local_commands``: serve, schema and demo
- ``output``: small printing helpers; ``exit_codes``: the process's exit codes
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys

from ..rpc.errors import ErrorCode
from ..session import AgentHostError
from .exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .parser import build_parser

__all__ = ["main"]

log = logging.getLogger("agent_host")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    _redact_secrets(getattr(args, "store", None))
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    check = getattr(args, "check", None)
    if check is not None:
        problem = check(args)
        if problem:
            args.subparser.error(problem)  # exits 2
    try:
        outcome = args.run(args)
        return asyncio.run(outcome) if asyncio.iscoroutine(outcome) else outcome
    except AgentHostError as exc:
        _report(exc)
        return EXIT_FAILED
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("agent-host: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `agent-host history X | head`
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        return EXIT_OK


def _redact_secrets(store: str | None) -> None:
    """Secrets of the environment and the store URL's password (--store, or the
    variable it defaults to) known, and masked in every log line: the first line
    that shows the URL -- the initialize request ``run`` sends its child server --
    is logged before any store is opened."""
    from ..session.environment import DEFAULT_POLICY
    from ..session.redaction import SECRETS, install_log_filter

    DEFAULT_POLICY.register_secrets()
    SECRETS.add_url(store)
    install_log_filter()


def _report(exc: AgentHostError) -> None:
    from ..client import ServerError, ServerExited
    from ..session.redaction import mask

    print(f"agent-host: {mask(str(exc))}", file=sys.stderr)
    tail: list[str] = []
    if isinstance(exc, ServerExited):
        tail = exc.stderr_tail
    elif (
        isinstance(exc, ServerError)
        and exc.code == ErrorCode.INTERNAL_ERROR
        and exc.method != "initialize"  # pygls's own handler: the message says it all
    ):
        tail = getattr(exc, "stderr_tail", [])
    if tail:
        print("agent-host: the server's last stderr lines:", file=sys.stderr)
        for line in tail:
            print(f"  {mask(line)}", file=sys.stderr)
