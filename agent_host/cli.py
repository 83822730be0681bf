"""The ``agent-host`` command.

So far it works on the session store directly: ``sessions``, ``gc`` and an offline
``demo``. The stdio server (``serve``) and the commands that drive it come next.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from datetime import datetime
from typing import Any

import orjson

from . import __version__
from .session import AgentHostError, Checkpointer, collect_garbage, default_store_url, open_store
from .session import events as ev

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
        return asyncio.run(args.run(args))
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

    demo = commands.add_parser("demo", help="record, list, rewind and un-rewind a session offline")
    demo.add_argument("--store", help="store URL (default: a new temporary folder)")
    demo.set_defaults(run=_demo)
    return parser


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
    with tempfile.TemporaryDirectory(prefix="agent-host-demo-") as tmp:
        store = open_store(args.store or f"{tmp}/store")
        try:
            await _run_demo(store)
        finally:
            await store.close()
    return 0


async def _run_demo(store: Checkpointer) -> None:
    sid = "demo-" + datetime.now().strftime("%Y%m%d-%H%M%S")
    original = b"def greet(name):\n    return 'hi ' + name\n"
    documented = b'def greet(name):\n    """Say hi."""\n    return \'hi \' + name\n'
    renamed = documented.replace(b"greet", b"welcome")
    print(f"store: {store!r}\nsession: {sid}\n")

    await store.append(sid, [ev.SessionStarted(workspace="/demo", model="scripted:demo")])
    for prompt, before, after, reply in (
        ("Add a docstring to hello.py", original, documented, "Added a docstring."),
        ("Rename greet to welcome", documented, renamed, "Renamed greet to welcome."),
    ):
        head = await store.head(sid)
        call = f"call-{head}"
        snapshot = ev.FileSnapshot(
            path="hello.py",
            before=await store.blobs.put(before),
            after=await store.blobs.put(after),
        )
        turn = [
            ev.UserPrompt(text=prompt),
            ev.ToolCall(call_id=call, name="write_file", arguments={"path": "hello.py"}),
            snapshot,
            ev.ToolResult(call_id=call, output="wrote hello.py"),
            ev.AssistantMessage(text=reply),
            ev.Usage(input_tokens=120, output_tokens=24, cost=0.0, model="scripted:demo"),
            ev.TurnEnd(stop_reason="end_turn"),
        ]
        new_head = await store.append(sid, turn, expected_head=head)
        print(f"turn  {prompt!r}: events {head + 1}-{new_head}")

    print("\nsessions:")
    for info in await store.list():
        print(f"  {info.id}  {info.turns} turns, {info.head} events, title {info.title!r}")

    print("\ncheckpoints (one per prompt):")
    events = await store.read(sid)
    prompts = [e for e in events if isinstance(e, ev.UserPrompt)]
    for prompt in prompts:
        files = sorted(
            {e.path for e in events if isinstance(e, ev.FileSnapshot) and e.seq > prompt.seq}
        )
        print(f"  seq {prompt.seq}: {prompt.text!r}  (files changed since: {', '.join(files)})")

    target = prompts[1]
    cut = await store.truncate(sid, target.seq - 1)
    snapshots = [e for e in cut.events if isinstance(e, ev.FileSnapshot)]
    restored = await store.blobs.get(snapshots[0].before)  # type: ignore[arg-type]
    print(f"\nrewind to just before seq {target.seq}: removed {len(cut.events)} events")
    print(f"  head is now {await store.head(sid)}; hello.py goes back to:")
    print("  | " + restored.decode().rstrip("\n").replace("\n", "\n  | "))

    (last,) = (await store.truncations(sid))[-1:]
    await store.append(sid, last.events, expected_head=last.seq)
    print(f"\nundo the rewind: head back to {await store.head(sid)}, nothing lost")
    result = await collect_garbage(store, grace_seconds=0)
    print(f"gc: {result.kept} snapshots referenced, {result.removed} removed")


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
