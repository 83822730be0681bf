"""The LSP dialect's methods, declared once: this module is the table.

Each row is a :class:`Method` -- its wire name, params and result types, request or
notification, which way it travels, and a one-line description. Everything else is
read from :data:`TABLE`: the server registers a handler for each client method
(``server/app.py``, ``server/handlers.py``), ``initialize`` advertises them
(:func:`advertised`), the JSON Schema describes them (``schema.py``) and the VS Code
extension's ``wire.generated.ts`` is generated from that schema (``typescript.py``).

A row is also its wire name: ``Method`` is a ``str``, so ``methods.NEW`` is
``"session/new"`` wherever a name is wanted.
"""

from __future__ import annotations

from typing import Any, Literal

from . import types as rpc

PROTOCOL_VERSION = 1

Kind = Literal["request", "notification"]
Direction = Literal["client->server", "server->client"]
CLIENT_TO_SERVER: Direction = "client->server"
SERVER_TO_CLIENT: Direction = "server->client"


class Method(str):
    """One row of the table; equal to (and usable as) its wire name."""

    params: type
    result: type | None
    """None for a notification, and for a request answered with ``null``."""
    kind: Kind
    direction: Direction
    doc: str

    def __new__(
        cls,
        name: str,
        params: type,
        result: type | None,
        kind: Kind,
        direction: Direction,
        doc: str,
    ) -> Method:
        row = super().__new__(cls, name)
        row.params, row.result, row.kind, row.direction, row.doc = (
            params,
            result,
            kind,
            direction,
            doc,
        )
        return row

    @property
    def name(self) -> str:
        return str(self)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (str, (str(self),))  # a copy or pickle is the plain name


_rows: list[Method] = []


def _row(
    name: str, params: type, result: type | None, kind: Kind, direction: Direction, doc: str
) -> Method:
    row = Method(name, params, result, kind, direction, doc)
    if row in _rows:
        raise ValueError(f"method {name!r} is declared twice")
    _rows.append(row)
    return row


def request(name: str, params: type, result: type | None, doc: str) -> Method:
    """A request the client sends and the server answers."""
    return _row(name, params, result, "request", CLIENT_TO_SERVER, doc)


def notification(name: str, params: type, doc: str) -> Method:
    """A notification the client sends."""
    return _row(name, params, None, "notification", CLIENT_TO_SERVER, doc)


def server_request(name: str, params: type, result: type, doc: str) -> Method:
    """A request the server sends and the client answers."""
    return _row(name, params, result, "request", SERVER_TO_CLIENT, doc)


def server_notification(name: str, params: type, doc: str) -> Method:
    """A notification the server sends."""
    return _row(name, params, None, "notification", SERVER_TO_CLIENT, doc)


# -- the table

NEW = request(
    "session/new", rpc.NewParams, rpc.NewResult, "Start an empty session; returns its id."
)
SEND = request(
    "session/send",
    rpc.SendParams,
    rpc.SendResult,
    "Run one turn: the prompt, then model and tool calls until the model stops.",
)
LIST = request(
    "session/list",
    rpc.ListParams,
    rpc.ListResult,
    "The stored sessions, most recently updated first, in pages.",
)
RESUME = request(
    "session/resume",
    rpc.SessionParams,
    rpc.ResumeResult,
    "Load a session and make it the server's current one.",
)
HISTORY = request(
    "session/history",
    rpc.HistoryParams,
    rpc.HistoryResult,
    "The conversation as the model sees it, in OpenAI chat format.",
)
DELETE = request("session/delete", rpc.SessionParams, None, "Delete a session's log.")
CHECKPOINTS = request(
    "session/checkpoints",
    rpc.SessionParams,
    rpc.CheckpointsResult,
    "One checkpoint per prompt, oldest first, with the files its turn changed.",
)
RESTORE = request(
    "session/restore",
    rpc.RestoreParams,
    rpc.RestoreResult,
    "Return the session, files and conversation, to just before the prompt at seq "
    "(dryRun: only say what it would do; paths: only those files).",
)
CHANGES = request(
    "session/changes",
    rpc.ChangesParams,
    rpc.ChangesResult,
    "Per-file diffs of a turn, or of a range of checkpoints, as the session recorded them.",
)
REVERT_FILES = request(
    "session/revertFiles",
    rpc.RevertFilesParams,
    rpc.RestoreResult,
    "Undo one turn's changes to chosen files, the conversation kept (undoable).",
)
UNDO_RESTORE = request(
    "session/undoRestore",
    rpc.UndoRestoreParams,
    rpc.UndoRestoreResult,
    "Undo the session's last restore.",
)
COMPACT = request(
    "session/compact",
    rpc.CompactParams,
    rpc.CompactResult,
    "Have the model summarise the conversation before the latest prompt.",
)
FORK = request(
    "session/fork",
    rpc.ForkParams,
    rpc.ForkResult,
    "A new session with another's conversation up to a checkpoint, or all of it.",
)
CLOSE = request(
    "session/close",
    rpc.SessionParams,
    None,
    "This server is done with the session: its turn is cancelled, what it held let go.",
)
CANCEL = notification(
    "session/cancel", rpc.SessionParams, "Cancel the turn running in the session, if any."
)
EVENT = server_notification(
    "session/event", rpc.EventParams, "Something happened in a running turn or compaction."
)
REQUEST_PERMISSION = server_request(
    "session/requestPermission",
    rpc.PermissionParams,
    rpc.PermissionResult,
    "May the agent run this tool call?",
)

TABLE: tuple[Method, ...] = tuple(_rows)
"""Every method, in the order declared."""

REQUESTS: tuple[Method, ...] = tuple(
    m for m in TABLE if m.kind == "request" and m.direction == CLIENT_TO_SERVER
)
"""The requests a client may send, each answered by one handler (server/handlers.py)."""


def advertised() -> dict[str, Any]:
    """The methods ``initialize`` lists under ``capabilities.experimental.agentHost``."""
    return {
        "methods": [m.name for m in TABLE if m.direction == CLIENT_TO_SERVER],
        "notifications": [
            m.name for m in TABLE if m.direction == SERVER_TO_CLIENT and m.kind == "notification"
        ],
        "clientRequests": [
            m.name for m in TABLE if m.direction == SERVER_TO_CLIENT and m.kind == "request"
        ],
    }
