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
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from . import __version__
from .rpc import methods
from .rpc.errors import ErrorCode
from .session import AgentHostError, collect_garbage, default_store_url, open_store

log = logging.getLogger("agent_host")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

STORE_ENV = "AGENT_HOST_STORE"
MODEL_ENV = "AGENT_HOST_MODEL"
APPROVALS = ("ask", "auto-edit", "auto", "read-only")

STOP_MESSAGES = {
    "max_turns": "the turn used up its model calls (max_turns) before the model finished",
    "max_tokens": "the model's answer was cut off at its output token limit (max_tokens)",
    "refusal": "the model refused the request",
    "error": "the turn ended with an error",
}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
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


def _report(exc: AgentHostError) -> None:
    from .client import ServerError, ServerExited

    print(f"agent-host: {exc}", file=sys.stderr)
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
            print(f"  {line}", file=sys.stderr)


# -- the parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-host",
        description="An AI coding agent host with durable, rewindable sessions.",
        epilog="Exit codes: 0 ok, 1 failed (server error or a turn that did not end "
        "with end_turn), 2 usage error, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"agent-host {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    # Options shared by the subcommands. -v is accepted after the command too.
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log debug output, and forward the server's stderr, to stderr",
    )
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--store",
        default=os.environ.get(STORE_ENV) or None,
        help=f"session store URL (default ${STORE_ENV}, else {default_store_url()})",
    )
    workspace = argparse.ArgumentParser(add_help=False)
    workspace.add_argument(
        "--workspace", metavar="DIR", help="the project folder (default: the current folder)"
    )
    model = argparse.ArgumentParser(add_help=False)
    model.add_argument(
        "--model",
        default=os.environ.get(MODEL_ENV) or None,
        help="provider/model (openai/gpt-4.1-mini, anthropic/..., ollama/...) or "
        f"scripted:PATH (default ${MODEL_ENV}, else the server's default)",
    )
    session_folder = argparse.ArgumentParser(add_help=False)
    session_folder.add_argument(
        "--workspace",
        metavar="DIR",
        help="the project folder to restore files in (default: the folder the session "
        "was started in)",
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="machine output: JSON lines")
    server = [verbose, store, workspace]

    def add(name: str, help: str, run: Any, parents: list[argparse.ArgumentParser]) -> Any:
        sub = commands.add_parser(name, help=help, description=help, parents=parents)
        sub.set_defaults(run=run, subparser=sub)
        return sub

    add(
        "serve",
        "speak JSON-RPC 2.0 with LSP framing on stdin/stdout (for editors and CI)",
        _serve,
        [verbose],
    )

    run = add(
        "run",
        "run one turn: stream the answer and the tool activity, exit 0 if it ended well",
        _run,
        [*server, model, as_json],
    )
    run.add_argument("prompt", metavar="PROMPT", help="what to ask; '-' reads it from stdin")
    run.add_argument(
        "--session",
        metavar="ID",
        help="continue this session (created under this id if it does not exist)",
    )
    run.add_argument(
        "--approve",
        choices=APPROVALS,
        default="ask",
        help="which tool calls run without asking: ask (default: asks on a terminal, "
        "rejects edits and commands elsewhere), auto-edit (edits run, commands ask), "
        "auto (everything runs), read-only (edits and commands are refused)",
    )
    run.set_defaults(check=_check_run)

    sessions = add("sessions", "list stored sessions, newest first", _sessions, [verbose, store])
    sessions.add_argument("--json", action="store_true", help="one JSON object per line")

    history = add(
        "history",
        "show a session's conversation as the model sees it",
        _history,
        [*server, as_json],
    )
    history.add_argument("session", metavar="ID")
    history.add_argument("--limit", type=int, metavar="N", help="only the last N messages")

    checkpoints = add(
        "checkpoints",
        "list a session's checkpoints: one per prompt, with the files it changed",
        _checkpoints,
        [*server, as_json],
    )
    checkpoints.add_argument("session", metavar="ID")

    restore = add(
        "restore",
        "return a session's files and conversation to just before checkpoint SEQ (undoable)",
        _restore,
        [verbose, store, session_folder, as_json],
    )
    restore.add_argument("session", metavar="ID")
    restore.add_argument("seq", metavar="SEQ", type=int, help="a checkpoint's seq")
    only = restore.add_mutually_exclusive_group()
    only.add_argument("--files-only", action="store_true", help="restore the files only")
    only.add_argument(
        "--conversation-only", action="store_true", help="restore the conversation only"
    )

    undo = add(
        "undo-restore",
        "undo a session's last restore: files and conversation as they were before it",
        _undo_restore,
        [verbose, store, session_folder, as_json],
    )
    undo.add_argument("session", metavar="ID")

    compact = add(
        "compact",
        "summarise the older part of a session's conversation (uses the model)",
        _compact,
        [*server, model, as_json],
    )
    compact.add_argument("session", metavar="ID")
    compact.add_argument("--instructions", metavar="TEXT", help="what the summary should keep")

    delete = add("delete", "delete a session", _delete, server)
    delete.add_argument("session", metavar="ID")

    gc = add("gc", "remove file snapshots no session refers to", _gc, [verbose, store])
    gc.add_argument(
        "--grace",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="keep snapshots written this recently (default 3600)",
    )

    add("schema", "print the protocol's JSON Schema (draft 2020-12)", _schema, [verbose])

    demo = add(
        "demo", "an offline session: three turns, checkpoints, a restore and its undo", _demo, []
    )
    demo.add_argument("--store", help="store URL (default: a new temporary folder)")
    return parser


def _check_run(args: argparse.Namespace) -> str | None:
    if args.prompt == "-":
        args.prompt = sys.stdin.read()
    if not args.prompt.strip():
        return "PROMPT must not be empty"
    return None


# -- commands on the store, in-process


def _serve(args: argparse.Namespace) -> int:
    import gc

    from .server.app import create_server
    from .server.stdio import ChunkedStdin

    server = create_server()
    # The start-up imports live as long as the process: keeping them out of the
    # collector's sweeps saves tens of ms per full collection during turns.
    gc.freeze()
    # stdout carries the protocol: nothing else may write to it.
    server.start_io(stdin=ChunkedStdin(sys.stdin.buffer), stdout=sys.stdout.buffer)
    return EXIT_OK


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
    return EXIT_OK


async def _gc(args: argparse.Namespace) -> int:
    store = open_store(args.store)
    try:
        result = await collect_garbage(store, grace_seconds=args.grace)
    finally:
        await store.close()
    print(f"removed {result.removed} snapshots ({result.freed_bytes} bytes), kept {result.kept}")
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from .rpc.schema import protocol_schema

    print(json.dumps(protocol_schema(), indent=2, ensure_ascii=False))
    return EXIT_OK


async def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    await run_demo(args.store)
    return EXIT_OK


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


# -- commands through a child `agent-host serve`


def _client(args: argparse.Namespace, **kw: Any) -> Any:
    from .client import AgentClient

    return AgentClient(
        store=args.store,
        model=getattr(args, "model", None),
        workspace=getattr(args, "workspace", None),
        verbose=args.verbose,
        on_message=lambda text: print(text, file=sys.stderr),
        **kw,
    )


async def _call(args: argparse.Namespace, method: str, params: dict[str, Any]) -> Any:
    """One request to a fresh child server; errors keep the child's stderr tail."""
    from .client import ServerError

    client = _client(args)
    try:
        await client.start()
        result = await client.request(method, params)
    except ServerError as exc:
        exc.stderr_tail = client.stderr_tail()  # type: ignore[attr-defined]
        raise
    finally:
        await client.close()
    _check_exit(client)
    return result


def _check_exit(client: Any) -> None:
    """A child that crashed or hung on the way out: say so, with what it last said."""
    if client.clean_exit:
        return
    print(
        f"agent-host: warning: the server did not exit cleanly (code {client.exit_code})",
        file=sys.stderr,
    )
    for line in client.stderr_tail():
        print(f"  {line}", file=sys.stderr)


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False), flush=True)


async def _history(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"sessionId": args.session}
    if args.limit is not None:
        params["limit"] = args.limit
    result = await _call(args, methods.HISTORY, params)
    messages = result["messages"]
    for message in messages:
        if args.json:
            _print_json(message)
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
        lines.append(f"  > {function.get('name')} {_shorten(function.get('arguments', ''), 160)}")
    return "\n".join(lines) if lines else f"{role}:"


async def _checkpoints(args: argparse.Namespace) -> int:
    result = await _call(args, methods.CHECKPOINTS, {"sessionId": args.session})
    found = result["checkpoints"]
    for c in found:
        if args.json:
            _print_json(c)
        else:
            print(f"{c['seq']:>5}  {c['createdAt']}  {_shorten(c['prompt'], 80)}")
            print(f"       changed: {', '.join(c['files']) or '-'}")
    if not found and not args.json:
        print(f"session {args.session} has no checkpoints", file=sys.stderr)
    return EXIT_OK


async def _restore(args: argparse.Namespace) -> int:
    files = not args.conversation_only
    if files:
        await _pick_workspace(args)
    params = {
        "sessionId": args.session,
        "seq": args.seq,
        "files": files,
        "conversation": not args.files_only,
    }
    result = await _call(args, methods.RESTORE, params)
    if args.json:
        _print_json(result)
        return EXIT_OK
    changed = result["restoredFiles"]
    print(
        f"restored session {args.session} to before checkpoint {args.seq}: "
        f"{_files(changed)}, {result['removedEvents']} events set aside"
    )
    print(f"undo with: agent-host undo-restore {args.session}", file=sys.stderr)
    return EXIT_OK


async def _undo_restore(args: argparse.Namespace) -> int:
    await _pick_workspace(args)
    result = await _call(args, methods.UNDO_RESTORE, {"sessionId": args.session})
    if args.json:
        _print_json(result)
        return EXIT_OK
    print(
        f"undid the last restore of session {args.session}: "
        f"{_files(result['restoredFiles'])} and {result['restoredEvents']} events back"
    )
    return EXIT_OK


async def _compact(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"sessionId": args.session}
    if args.instructions:
        params["instructions"] = args.instructions
    result = await _call(args, methods.COMPACT, params)
    if args.json:
        _print_json(result)
    else:
        print(
            f"compacted session {args.session}: about {result['before']} -> "
            f"{result['after']} tokens"
        )
    return EXIT_OK


async def _delete(args: argparse.Namespace) -> int:
    await _call(args, methods.DELETE, {"sessionId": args.session})
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
    from .session.events import SessionStarted

    store = open_store(store_url)
    try:
        events = await store.read(session_id)
    except ValueError:
        return None  # not a valid id: the server says so
    finally:
        await store.close()
    first = next((e for e in events if type(e) is SessionStarted), None)
    return first.workspace if first is not None else None


def _files(paths: list[str]) -> str:
    if not paths:
        return "no files"
    noun = "file" if len(paths) == 1 else "files"
    return f"{len(paths)} {noun} ({', '.join(sorted(paths))})"


def _shorten(text: str, limit: int) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- run


async def _run(args: argparse.Namespace) -> int:
    from .client import ServerError

    out = _JsonPrinter() if args.json else _TextPrinter()
    turn = _Turn(args, out)
    client = _client(
        args, approval=args.approve, on_event=out.event, on_permission=turn.ask_permission
    )
    turn.client = client
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, turn.interrupt)
    try:
        await client.start()
        if turn.interrupted:
            return EXIT_INTERRUPTED
        if args.session is None:
            # A session id before the turn starts, so Ctrl-C can always cancel it.
            turn.session_id = (await client.request(methods.NEW, {}))["sessionId"]
        else:
            turn.session_id = args.session
        result = await turn.send()
    except AgentHostError as exc:
        if isinstance(exc, ServerError):
            out.failed(turn.session_id, exc.to_json())
            exc.stderr_tail = client.stderr_tail()  # type: ignore[attr-defined]
        else:
            out.failed(turn.session_id, {"code": None, "message": str(exc), "data": None})
        if turn.session_id:
            exc.args = (f"{exc} (session {turn.session_id})",)
        raise
    except asyncio.CancelledError:
        if turn.interrupted:
            print("agent-host: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        raise
    finally:
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(signal.SIGINT)
        await asyncio.shield(client.close())
    if turn.interrupted < 2:
        _check_exit(client)
    out.result(result)
    stop = result["stopReason"]
    if turn.interrupted or stop == "cancelled":
        print(f"agent-host: interrupted; session {result['sessionId']} is intact", file=sys.stderr)
        return EXIT_INTERRUPTED
    if stop != "end_turn":
        print(f"agent-host: {STOP_MESSAGES.get(stop, stop)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


class _Turn:
    """One ``run``: the session, Ctrl-C and the permission prompts."""

    def __init__(self, args: argparse.Namespace, out: _Printer) -> None:
        self.args = args
        self.out = out
        self.client: Any = None
        self.session_id: str | None = None
        self.interrupted = 0
        self.sending = False
        self.prompting = False
        self._main = asyncio.current_task()
        self._hinted = False

    async def send(self) -> dict[str, Any]:
        self.sending = True
        repeat = asyncio.create_task(self._repeat_cancel())
        try:
            return await self.client.request(
                methods.SEND, {"sessionId": self.session_id, "prompt": self.args.prompt}
            )
        finally:
            self.sending = False
            repeat.cancel()

    def interrupt(self) -> None:
        """Ctrl-C: cancel the turn (the server closes it and answers); twice: stop now."""
        self.interrupted += 1
        if self.prompting:  # the cursor is after "Allow ...?"
            sys.stderr.write("\n")
        if self.interrupted == 1 and self.sending and self.session_id:
            self.out.pause()
            print(
                "agent-host: cancelling the turn (Ctrl-C again to stop at once)",
                file=sys.stderr,
                flush=True,
            )
            self.client.cancel(self.session_id)
            return
        if self.interrupted > 1 and self.client is not None:
            self.client.kill()
        if self._main is not None:
            self._main.cancel()

    async def _repeat_cancel(self) -> None:
        # A cancel that lands before the server has registered the turn does nothing:
        # repeat it until the turn answers.
        while True:
            await asyncio.sleep(1.0)
            if self.interrupted and self.session_id:
                self.client.cancel(self.session_id)

    async def ask_permission(self, params: dict[str, Any]) -> str:
        self.out.pause()
        tool = params.get("tool", "?")
        what = _describe_call(tool, params.get("arguments") or {})
        if not _interactive():
            print(
                f"agent-host: rejected {what}: --approve {self.args.approve} asks before "
                f"{params.get('kind', 'this')} tools and there is no terminal to ask on",
                file=sys.stderr,
                flush=True,
            )
            if not self._hinted:
                self._hinted = True
                print(
                    "agent-host: pass --approve auto-edit (edits run) or --approve auto "
                    "(edits and commands run) to allow them",
                    file=sys.stderr,
                    flush=True,
                )
            decision = "reject_once"
        else:
            self.prompting = True
            try:
                decision = await _ask_on_terminal(what, params.get("diff"))
            finally:
                self.prompting = False
        self.out.permission(params, decision)
        return decision


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _describe_call(tool: str, arguments: dict[str, Any]) -> str:
    if "command" in arguments:
        return f"{tool} `{_shorten(arguments['command'], 120)}`"
    if "path" in arguments:
        return f"{tool} {arguments['path']}"
    return tool


async def _ask_on_terminal(what: str, diff: str | None) -> str:
    if diff:
        sys.stderr.write(diff if diff.endswith("\n") else diff + "\n")
    answers = {
        "y": "allow_once",
        "yes": "allow_once",
        "a": "allow_always",
        "always": "allow_always",
        "n": "reject_once",
        "no": "reject_once",
        "": "reject_once",
    }
    while True:
        sys.stderr.write(f"Allow {what}? [y]es / [N]o / [a]lways: ")
        sys.stderr.flush()
        line = await _read_line()
        if line is None:  # end of input
            sys.stderr.write("\n")
            return "reject_once"
        answer = answers.get(line.strip().lower())
        if answer is not None:
            return answer


async def _read_line() -> str | None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = sys.stdin.fileno()
    try:
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
    except (NotImplementedError, ValueError):
        line = await asyncio.to_thread(sys.stdin.readline)
        return line or None
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    line = sys.stdin.readline()
    return line or None


# -- printing a turn


class _Printer:
    def event(self, params: dict[str, Any]) -> None: ...
    def permission(self, params: dict[str, Any], decision: str) -> None: ...
    def result(self, result: dict[str, Any]) -> None: ...
    def failed(self, session_id: str | None, error: dict[str, Any]) -> None: ...
    def pause(self) -> None: ...


class _TextPrinter(_Printer):
    """The answer as it streams, tool activity as lines, a summary on stderr."""

    def __init__(self) -> None:
        self.mid_line = False

    def _write(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def _line(self, text: str) -> None:
        self.pause()
        self._write(text + "\n")

    def pause(self) -> None:
        if self.mid_line:
            self._write("\n")
            self.mid_line = False

    def event(self, params: dict[str, Any]) -> None:
        kind = params.get("kind")
        data = params.get("data") or {}
        if kind == "text_delta":
            text = data.get("text", "")
            if text:
                self._write(text)
                self.mid_line = not text.endswith("\n")
        elif kind == "assistant_message":
            self.pause()
        elif kind == "tool_call":
            shown = ", ".join(
                f"{k}={_shorten(str(v), 40)!r}" for k, v in (data.get("arguments") or {}).items()
            )
            self._line(f"  tool {data.get('name')}({shown})")
        elif kind == "tool_result" and data.get("isError"):
            self._line(f"  ! {_shorten(data.get('output', ''), 200)}")
        elif kind == "file_snapshot":
            verb = "changed"
            if data.get("before") is None:
                verb = "created"
            elif data.get("after") is None:
                verb = "deleted"
            self._line(f"  {verb} {data.get('path')}")
        elif kind == "compaction_progress" and data.get("stage") == "done":
            self._line(f"  [compacted the conversation: {data.get('message', '')}]")

    def result(self, result: dict[str, Any]) -> None:
        self.pause()
        usage = result.get("usage") or {}
        print(
            f"[{result['stopReason']}] session {result['sessionId']}, checkpoint "
            f"{result['checkpoint']}, {usage.get('inputTokens', 0)} in / "
            f"{usage.get('outputTokens', 0)} out tokens, ${result.get('cost', 0.0):.4f}",
            file=sys.stderr,
            flush=True,
        )

    def failed(self, session_id: str | None, error: dict[str, Any]) -> None:
        self.pause()


class _JsonPrinter(_Printer):
    """One JSON object per line: each session/event's params as sent, then a
    ``{"kind": "result"}`` (or ``"error"``) line."""

    def event(self, params: dict[str, Any]) -> None:
        _print_json(params)

    def permission(self, params: dict[str, Any], decision: str) -> None:
        _print_json(
            {
                "sessionId": params.get("sessionId"),
                "kind": "permission",
                "data": {**params, "outcome": decision},
            }
        )

    def result(self, result: dict[str, Any]) -> None:
        _print_json({"sessionId": result.get("sessionId"), "kind": "result", "data": result})

    def failed(self, session_id: str | None, error: dict[str, Any]) -> None:
        _print_json({"sessionId": session_id, "kind": "error", "data": error})
