"""The argparse tree: every subcommand, its options, and the function it runs."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .. import __version__
from ..session import default_store_url
from ..session.approval import APPROVALS
from ..session.providers.registry import DEFAULT_MODEL, SUPPORTED_FORMS
from ..session.sandbox.policy import SANDBOX_MODES
from .local_commands import acp, check_acp, demo, schema, serve
from .parser_limits import add_limit_flags
from .run import check_run, run
from .session_commands import checkpoints, compact, delete, history, restore, undo_restore
from .store_commands import gc, sessions

STORE_ENV = "AGENT_HOST_STORE"
MODEL_ENV = "AGENT_HOST_MODEL"


SHELL_ENV_HELP = (
    "what of the environment commands and MCP servers see (default: all but "
    "*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *CREDENTIAL* and the model keys): JSON "
    '{"include": [patterns kept], "exclude": [patterns removed], "set": {NAME: value}}'
)

SANDBOX_HELP = (
    "how commands and MCP servers are confined: workspace-write (default: write the "
    "workspace and a private temp, no network, secrets unreadable), read-only, full (no "
    "sandbox); default $AGENT_HOST_SANDBOX"
)


def build_parser() -> argparse.ArgumentParser:
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
        help=f"one of: {'; '.join(SUPPORTED_FORMS)} (default ${MODEL_ENV}, else {DEFAULT_MODEL})",
    )
    add_limit_flags(model)
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
        serve,
        [verbose],
    )

    acp_parser = add(
        "acp",
        "speak the Agent Client Protocol on stdin/stdout (Zed, JetBrains, Neovim, Emacs)",
        acp,
        [verbose, store, model],
    )
    acp_parser.add_argument(
        "--approval",
        choices=APPROVALS,
        default="ask",
        help="the sessions' starting mode (the client can switch it): ask (default), "
        "auto-edit, auto, read-only",
    )
    acp_parser.add_argument(
        "--mcp-config",
        metavar="FILE",
        help="MCP servers for sessions whose client names none: JSON as Claude Code and "
        'Cursor keep it, {"mcpServers": {"NAME": {"command": ..., "args": [...]}}}',
    )
    acp_parser.add_argument("--shell-env", metavar="FILE", help=SHELL_ENV_HELP)
    acp_parser.add_argument("--sandbox", choices=SANDBOX_MODES, help=SANDBOX_HELP)
    acp_parser.set_defaults(check=check_acp, mcp_servers=(), shell_environment=None)

    run_parser = add(
        "run",
        "run one turn: stream the answer and the tool activity, exit 0 if it ended well",
        run,
        [*server, model, as_json],
    )
    run_parser.add_argument("prompt", metavar="PROMPT", help="what to ask; '-' reads it from stdin")
    run_parser.add_argument(
        "--session",
        metavar="ID",
        help="continue this session (created under this id if it does not exist)",
    )
    run_parser.add_argument(
        "--approve",
        choices=APPROVALS,
        default="ask",
        help="which tool calls run without asking: ask (default: asks on a terminal, "
        "rejects edits and commands elsewhere), auto-edit (edits run, commands ask), "
        "auto (everything runs), read-only (edits and commands are refused)",
    )
    run_parser.add_argument(
        "--mcp-config",
        metavar="FILE",
        help="MCP servers whose tools the turn may use: JSON as Claude Code and Cursor keep "
        'it, {"mcpServers": {"NAME": {"command": ..., "args": [...], "env": {...}}}} '
        '(or {"url": ..., "headers": {...}} for a streamable HTTP server)',
    )
    run_parser.add_argument("--shell-env", metavar="FILE", help=SHELL_ENV_HELP)
    run_parser.add_argument("--sandbox", choices=SANDBOX_MODES, help=SANDBOX_HELP)
    run_parser.set_defaults(check=check_run, mcp_servers=None, shell_environment=None)

    sessions_parser = add(
        "sessions", "list stored sessions, newest first", sessions, [verbose, store]
    )
    sessions_parser.add_argument("--json", action="store_true", help="one JSON object per line")
    sessions_parser.add_argument(
        "--workspace",
        metavar="DIR",
        help="only the sessions started in DIR (e.g. --workspace . for this folder)",
    )

    history_parser = add(
        "history",
        "show a session's conversation as the model sees it",
        history,
        [*server, as_json],
    )
    history_parser.add_argument("session", metavar="ID")
    history_parser.add_argument("--limit", type=int, metavar="N", help="only the last N messages")

    checkpoints_parser = add(
        "checkpoints",
        "list a session's checkpoints: one per prompt, with the files it changed",
        checkpoints,
        [*server, as_json],
    )
    checkpoints_parser.add_argument("session", metavar="ID")

    restore_parser = add(
        "restore",
        "return a session's files and conversation to just before checkpoint SEQ (undoable)",
        restore,
        [verbose, store, session_folder, as_json],
    )
    restore_parser.add_argument("session", metavar="ID")
    restore_parser.add_argument("seq", metavar="SEQ", type=int, help="a checkpoint's seq")
    only = restore_parser.add_mutually_exclusive_group()
    only.add_argument("--files-only", action="store_true", help="restore the files only")
    only.add_argument(
        "--conversation-only", action="store_true", help="restore the conversation only"
    )
    restore_parser.add_argument(
        "--force",
        action="store_true",
        help="also overwrite files changed since the session last wrote them (conflicts); "
        "their content is kept, so undo-restore brings it back",
    )

    undo_parser = add(
        "undo-restore",
        "undo a session's last restore: files and conversation as they were before it",
        undo_restore,
        [verbose, store, session_folder, as_json],
    )
    undo_parser.add_argument("session", metavar="ID")

    compact_parser = add(
        "compact",
        "summarise the older part of a session's conversation (uses the model)",
        compact,
        [*server, model, as_json],
    )
    compact_parser.add_argument("session", metavar="ID")
    compact_parser.add_argument(
        "--instructions", metavar="TEXT", help="what the summary should keep"
    )

    delete_parser = add("delete", "delete a session", delete, server)
    delete_parser.add_argument("session", metavar="ID")

    gc_parser = add("gc", "remove file snapshots no session refers to", gc, [verbose, store])
    gc_parser.add_argument(
        "--grace",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="keep snapshots written this recently (default 3600)",
    )

    schema_parser = add(
        "schema", "print the protocol's JSON Schema (draft 2020-12)", schema, [verbose]
    )
    schema_parser.add_argument(
        "--typescript",
        action="store_true",
        help="print it as TypeScript instead (editors/vscode/src/protocol/wire.generated.ts)",
    )

    demo_parser = add(
        "demo", "an offline session: three turns, checkpoints, a restore and its undo", demo, []
    )
    demo_parser.add_argument("--store", help="store URL (default: a new temporary folder)")
    return parser
