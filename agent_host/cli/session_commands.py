"""history, checkpoints, restore, undo-restore, compact and delete.

Each is one request to a fresh child ``agent-host serve``
(``child_server.call_server``), the path a CI job takes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..rpc import methods
from ..service.text import (
    checkpoint_label,
    count,
    describe_files,
    outside_changes,
    shorten,
    unconfined_runs,
)
from ..session import AgentHostError, open_store
from .child_server import call_server
from .exit_codes import EXIT_OK
from .output import print_json


async def history(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"sessionId": args.session}
    if args.limit is not None:
        params["limit"] = args.limit
    result = await call_server(args, methods.HISTORY, params)
    messages = result["messages"]
    for message in messages:
        if args.json:
            print_json(message)
        else:
            print(_show_message(message))
    if not messages and not args.json:
        print(f"session {args.session} has no messages", file=sys.stderr)
    return EXIT_OK


def _show_message(message: dict[str, Any]) -> str:
    role = message.get("role", "?")
    content = message.get("content")
    lines = []
    if role == "tool":
        text = content if isinstance(content, str) else json.dumps(content)
        first, *rest = text.splitlines() or [""]
        more = f"  (+{len(rest)} lines)" if rest else ""
        return f"  = {first[:160]}{more}"
    if isinstance(content, str) and content:
        lines.append(f"{role}: {content}")
    elif content is None and not message.get("tool_calls"):
        lines.append(f"{role}:")
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        lines.append(f"  > {function.get('name')} {shorten(function.get('arguments', ''), 160)}")
    return "\n".join(lines) if lines else f"{role}:"


async def checkpoints(args: argparse.Namespace) -> int:
    result = await call_server(args, methods.CHECKPOINTS, {"sessionId": args.session})
    found = result["checkpoints"]
    for c in found:
        if args.json:
            print_json(c)
        else:
            label = checkpoint_label(c["ordinal"], c["prompt"])
            print(f"{label}  (checkpoint {c['seq']}, {c['createdAt']})")
            print(f"       changed: {', '.join(c['files']) or '-'}")
            if c.get("unconfined"):
                print(f"       ran without the sandbox: {unconfined_runs(c['unconfined'])}")
    if not found and not args.json:
        print(f"session {args.session} has no checkpoints", file=sys.stderr)
    return EXIT_OK


async def restore(args: argparse.Namespace) -> int:
    files = not args.conversation_only
    if files:
        await _pick_workspace(args)
    params = {
        "sessionId": args.session,
        "seq": args.seq,
        "files": files,
        "conversation": not args.files_only,
        "force": args.force,
    }
    result = await call_server(args, methods.RESTORE, params)
    if args.json:
        print_json(result)
        return EXIT_OK
    changed = result["restoredFiles"]
    print(
        f"restored session {args.session} to before checkpoint {args.seq}: "
        f"{describe_files(changed)}, {count(result['messagesRemoved'], 'message')} removed"
    )
    _report_left(result)
    if result["conflicts"]:
        print(
            f"to overwrite them too: agent-host undo-restore {args.session} && "
            f"agent-host restore {args.session} {args.seq} --force",
            file=sys.stderr,
        )
    print(f"undo with: agent-host undo-restore {args.session}", file=sys.stderr)
    return EXIT_OK


def _report_left(result: dict[str, Any]) -> None:
    """What a restore or undo did not put back, and why (on stderr: warnings)."""
    if result.get("conflicts"):
        print(
            "left as they are, changed since the session last wrote them: "
            + ", ".join(result["conflicts"]),
            file=sys.stderr,
        )
    if result.get("notCaptured"):
        print(
            "changed by commands but not captured, so not restored: "
            + ", ".join(result["notCaptured"]),
            file=sys.stderr,
        )
    if result.get("unconfined"):
        print(outside_changes(result["unconfined"]), file=sys.stderr)
    for path, reason in (result.get("notRestored") or {}).items():
        print(f"not restored, the editor did not write it: {path} ({reason})", file=sys.stderr)


async def undo_restore(args: argparse.Namespace) -> int:
    await _pick_workspace(args)
    result = await call_server(args, methods.UNDO_RESTORE, {"sessionId": args.session})
    if args.json:
        print_json(result)
        return EXIT_OK
    print(
        f"undid the last restore of session {args.session}: "
        f"{describe_files(result['restoredFiles'])} and "
        f"{count(result['messagesRestored'], 'message')} back"
    )
    _report_left(result)
    return EXIT_OK


async def compact(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"sessionId": args.session}
    if args.instructions:
        params["instructions"] = args.instructions
    result = await call_server(args, methods.COMPACT, params)
    if args.json:
        print_json(result)
    elif result.get("compacted", True):
        print(
            f"compacted session {args.session}: about {result['before']} -> "
            f"{result['after']} tokens"
        )
    else:
        print(
            f"session {args.session} left as it was: about {result['before']} tokens, "
            "too little to summarise or no smaller for it"
        )
    return EXIT_OK


async def delete(args: argparse.Namespace) -> int:
    await call_server(args, methods.DELETE, {"sessionId": args.session})
    print(f"deleted session {args.session}")
    return EXIT_OK


async def _pick_workspace(args: argparse.Namespace) -> None:
    """Files are restored into the folder the session was started in, unless told.

    Restoring into whichever folder the command happens to run in would overwrite
    another project's files.
    """
    if args.workspace is not None:
        return
    started = await _session_folder(args.store, args.session)
    if started is None:
        return  # an unknown session: the server names the error
    if Path(started).is_dir():
        args.workspace = started
        if Path(started).resolve() != Path.cwd().resolve():
            print(f"agent-host: workspace {started} (where the session started)", file=sys.stderr)
        return
    raise AgentHostError(
        f"session {args.session} was started in {started}, which no longer exists; "
        "pass --workspace DIR to restore its files there"
    )


async def _session_folder(store_url: str | None, session_id: str) -> str | None:
    from ..session.events import SessionStarted

    store = open_store(store_url)
    try:
        events = await store.read(session_id)
    except ValueError:
        return None  # not a valid id: the server says so
    finally:
        await store.close()
    first = next((e for e in events if type(e) is SessionStarted), None)
    return first.workspace if first is not None else None
