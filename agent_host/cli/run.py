"""The ``run`` command: one turn through a child server.

The answer streams as it comes (``turn_output``); tool calls that need a yes ask
on the terminal, or are rejected when there is none; Ctrl-C cancels the turn so
the session stays whole, and a second Ctrl-C stops at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from typing import Any

from ..rpc import methods
from ..service.text import shorten
from ..session import AgentHostError
from .child_server import check_exit, make_client
from .exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from .turn_output import JsonPrinter, TextPrinter, TurnPrinter

STOP_MESSAGES = {
    "max_turns": "the turn used up its model calls (max_turns) before the model finished",
    "max_tokens": "the model's answer was cut off at its output token limit (max_tokens)",
    "refusal": "the model refused the request",
    "error": "the turn ended with an error",
}


def check_run(args: argparse.Namespace) -> str | None:
    """PROMPT: '-' reads stdin; it must not be blank. A problem is a usage error."""
    if args.prompt == "-":
        args.prompt = sys.stdin.read()
    if not args.prompt.strip():
        return "PROMPT must not be empty"
    if args.mcp_config:
        from ..session.errors import McpConfigError
        from ..session.mcp import load_config_file

        try:
            args.mcp_servers = [wire_server(c) for c in load_config_file(args.mcp_config)]
        except McpConfigError as exc:
            return str(exc)
    if args.shell_env:
        problem = load_shell_env(args)
        if problem:
            return problem
    return None


def load_shell_env(args: argparse.Namespace) -> str | None:
    """--shell-env FILE read and checked here, so a bad file is a usage error."""
    from ..session.environment import EnvironmentPolicy, ShellEnvironmentError

    try:
        with open(args.shell_env, encoding="utf-8") as f:
            data = json.load(f)
        EnvironmentPolicy.from_json(data, where=args.shell_env)
    except OSError as exc:
        return f"cannot read --shell-env {args.shell_env}: {exc.strerror or exc}"
    except json.JSONDecodeError as exc:
        return f"--shell-env {args.shell_env} is not JSON: {exc}"
    except ShellEnvironmentError as exc:
        return f"--shell-env: {exc}"
    args.shell_environment = data
    return None


def wire_server(config: Any) -> dict[str, Any]:
    """An MCP server's config in ACP's McpServer shape, for initializationOptions."""
    server: dict[str, Any]
    if config.transport == "http":
        headers = [{"name": k, "value": v} for k, v in config.headers]
        server = {"type": "http", "name": config.name, "url": config.url, "headers": headers}
    else:
        server = {
            "name": config.name,
            "command": config.command,
            "args": list(config.args),
            "env": [{"name": k, "value": v} for k, v in config.env],
        }
        if config.cwd:
            server["cwd"] = config.cwd
        if config.sandbox is not None:
            server["sandbox"] = config.sandbox.to_json()
    if config.tool_timeout is not None:
        server["timeout"] = config.tool_timeout * 1000  # milliseconds, as the file has it
    return server


async def run(args: argparse.Namespace) -> int:
    from ..client import ServerError

    out = JsonPrinter() if args.json else TextPrinter()
    turn = _Turn(args, out)
    client = make_client(
        args,
        approval=args.approve,
        on_event=out.event,
        on_permission=turn.ask_permission,
        shell_environment=args.shell_environment,
        sandbox=args.sandbox,
    )
    turn.client = client
    loop = asyncio.get_running_loop()
    # Loops without signal handlers (Windows) leave Ctrl-C as KeyboardInterrupt.
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
        check_exit(client)
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

    def __init__(self, args: argparse.Namespace, out: TurnPrinter) -> None:
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
            params = {"sessionId": self.session_id, "prompt": self.args.prompt}
            if self.args.model:
                # Chosen for this turn, over the model the session was started with.
                params["model"] = self.args.model
            return await self.client.request(methods.SEND, params)
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
        what = _describe_call(tool, params.get("arguments") or {}, params.get("sandboxDenial"))
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


# -- the permission prompt


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _describe_call(tool: str, arguments: dict[str, Any], denial: str | None = None) -> str:
    if denial is not None:
        command = shorten(str(arguments.get("command", "")), 120)
        return f"`{command}` again WITHOUT the sandbox (the sandbox stopped it: {denial})"
    if "command" in arguments:
        return f"{tool} `{shorten(arguments['command'], 120)}`"
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

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    try:
        loop.add_reader(fd, wake)
    except (NotImplementedError, ValueError):  # no add_reader here (Windows, a file)
        line = await asyncio.to_thread(sys.stdin.readline)
        return line or None
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    line = sys.stdin.readline()
    return line or None
