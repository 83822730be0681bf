"""The ``agent-host`` command.

So far: ``sessions`` and ``gc`` on the session store, and an offline ``demo``. The
stdio server (``serve``) and the commands that drive it come next.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from datetime import datetime
from typing import Any

import orjson

from . import __version__
from .session import AgentHostError, collect_garbage, default_store_url, open_store

log = logging.getLogger("agent_host")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command is None:
        parser.print_help()
        return 2
    try:
        outcome = args.run(args)
        return asyncio.run(outcome) if asyncio.iscoroutine(outcome) else outcome
    except AgentHostError as exc:
        print(f"agent-host: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-host",
        description="An AI coding agent host with durable, rewindable sessions.",
    )
    parser.add_argument("--version", action="version", version=f"agent-host {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser(
        "serve", help="speak JSON-RPC 2.0 with LSP framing on stdin/stdout (for editors and CI)"
    )
    serve.set_defaults(run=_serve)

    store_help = f"session store URL (default {default_store_url()})"
    sessions = commands.add_parser("sessions", help="list stored sessions, newest first")
    sessions.add_argument("--store", help=store_help)
    sessions.add_argument("--json", action="store_true", help="one JSON object per line")
    sessions.set_defaults(run=_sessions)

    gc = commands.add_parser("gc", help="remove file snapshots no session refers to")
    gc.add_argument("--store", help=store_help)
    gc.add_argument(
        "--grace",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="keep snapshots written this recently (default 3600)",
    )
    gc.set_defaults(run=_gc)

    demo = commands.add_parser(
        "demo", help="an offline session: three turns, checkpoints, a restore and its undo"
    )
    demo.add_argument("--store", help="store URL (default: a new temporary folder)")
    demo.set_defaults(run=_demo)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from .server.app import create_server

    # stdout carries the protocol: nothing else may write to it.
    create_server().start_io()
    return 0


async def _sessions(args: argparse.Namespace) -> int:
    store = open_store(args.store)
    try:
        infos = await store.list()
    finally:
        await store.close()
    for info in infos:
        if args.json:
            print(orjson.dumps(_info_json(info)).decode())
        else:
            print(f"{info.id}  {_when(info.updated_at)}  {info.turns:>3} turns  {info.title}")
    if not infos and not args.json:
        print("no sessions", file=sys.stderr)
    return 0


async def _gc(args: argparse.Namespace) -> int:
    store = open_store(args.store)
    try:
        result = await collect_garbage(store, grace_seconds=args.grace)
    finally:
        await store.close()
    print(f"removed {result.removed} snapshots ({result.freed_bytes} bytes), kept {result.kept}")
    return 0


async def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    await run_demo(args.store)
    return 0


def _info_json(info: Any) -> dict[str, Any]:
    return {
        "id": info.id,
        "title": info.title,
        "turns": info.turns,
        "head": info.head,
        "createdAt": _when(info.created_at),
        "updatedAt": _when(info.updated_at),
    }


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")
