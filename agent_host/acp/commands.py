"""Rewind and friends, two ways: slash commands typed in the prompt, and
``_agent-host/*`` extension methods for clients that build their own UI.

A slash command runs instead of a turn and answers with an agent message; the
extension methods answer with JSON (camelCase) and raise typed errors.
"""

from __future__ import annotations

import re
from typing import Any

from acp import RequestError
from acp import schema as s
from pydantic import BaseModel, ConfigDict, Field

from ..cli.output import describe_files, local_time, shorten
from ..service import SessionService
from ..session.checkpoints import Checkpoint, NothingToUndo
from . import convert
from .errors import ext_params, invalid_params

COMMANDS = [
    s.AvailableCommand(
        name="checkpoints",
        description="List this session's checkpoints: one per prompt, with the files it changed",
    ),
    s.AvailableCommand(
        name="rewind",
        description="Return files and conversation to just before a prompt (undo with "
        "/undo-rewind)",
        input=s.UnstructuredCommandInput(hint="a checkpoint's seq, or -N for N prompts back"),
    ),
    s.AvailableCommand(name="undo-rewind", description="Undo the last rewind"),
    s.AvailableCommand(
        name="compact",
        description="Summarise the older part of the conversation",
        input=s.UnstructuredCommandInput(hint="what the summary should keep"),
    ),
    s.AvailableCommand(name="fork", description="Copy this session into a new one"),
]

_COMMAND = re.compile(
    r"/(?P<name>checkpoints|rewind|undo-rewind|compact|fork)(?:\s+(?P<arg>.*))?", re.DOTALL
)


def parse(text: str) -> tuple[str, str] | None:
    """``(name, argument)`` when the prompt is one of our slash commands."""
    found = _COMMAND.fullmatch(text.strip())
    return (found["name"], (found["arg"] or "").strip()) if found else None


async def run(service: SessionService, session_id: str, name: str, arg: str) -> str:
    """What the command did, for the user to read."""
    if name == "checkpoints":
        return _list(await service.checkpoints(session_id))
    if name == "rewind":
        return await _rewind(service, session_id, arg)
    if name == "undo-rewind":
        try:
            undone = await service.undo_restore(session_id)
        except NothingToUndo:
            return "Nothing to undo: this session has no rewind to take back."
        return f"Undid the last rewind: restored {describe_files(undone.restored_files)}." + (
            _conflicts(undone.conflicts)
        )
    if name == "compact":
        done = await service.compact(session_id, arg or None)
        if not done.compacted:
            return "Nothing to compact: the conversation is as short as a summary would be."
        return f"Compacted the conversation: about {done.before} → {done.after} tokens."
    fork_id = await service.fork(session_id)
    return f"Forked this session as {fork_id}; load it to continue there."


def _list(checkpoints: list[Checkpoint]) -> str:
    if not checkpoints:
        return "No checkpoints yet: each prompt makes one."
    lines = ["Checkpoints (rewind with /rewind SEQ):"]
    for cp in checkpoints:
        lines.append(
            f"- {cp.seq}  {local_time(cp.created_at)}  {shorten(cp.prompt, 60)!r}: "
            f"{describe_files(cp.files)}"
        )
    return "\n".join(lines)


async def _rewind(service: SessionService, session_id: str, arg: str) -> str:
    checkpoints = await service.checkpoints(session_id)
    if not checkpoints:
        return "Nothing to rewind to: this session has no prompts yet."
    target = _target(checkpoints, arg or "-1")
    if target is None:
        seqs = ", ".join(str(cp.seq) for cp in checkpoints)
        return f"No checkpoint {arg!r}: use a seq ({seqs}) or -N for N prompts back."
    result = await service.restore(session_id, target.seq)
    text = (
        f"Rewound to just before {shorten(target.prompt, 60)!r} (checkpoint {target.seq}): "
        f"restored {describe_files(result.restored_files)}."
    )
    if result.not_captured:
        text += f" Not restored (never captured): {', '.join(result.not_captured)}."
    return text + _conflicts(result.conflicts) + " Load the session again to see the conversation."


def _target(checkpoints: list[Checkpoint], arg: str) -> Checkpoint | None:
    if re.fullmatch(r"-\d+", arg):
        back = int(arg[1:])
        return checkpoints[-back] if 1 <= back <= len(checkpoints) else None
    if arg.isdigit():
        return next((cp for cp in checkpoints if cp.seq == int(arg)), None)
    return None


def _conflicts(paths: list[str]) -> str:
    if not paths:
        return ""
    return (
        f" Kept as they are (changed since the agent last wrote them): {', '.join(paths)};"
        " _agent-host/restore with force overwrites them."
    )


# -- extension methods


class SessionParams(BaseModel):
    model_config = ConfigDict(strict=True, populate_by_name=True)
    session_id: str = Field(alias="sessionId")


class RestoreParams(SessionParams):
    seq: int
    files: bool = True
    conversation: bool = True
    force: bool = False


async def extension(service: SessionService, method: str, params: dict[str, Any]) -> Any:
    """Answer the extension ``method`` (its name without the leading ``_``)."""
    model = _EXTENSIONS.get(method)
    if model is None:
        raise RequestError.method_not_found(f"_{method}")
    p = ext_params(model, params)
    sid = p.session_id  # an unknown one is the service's SessionNotFound
    if method == "agent-host/checkpoints":
        return {"checkpoints": [convert.checkpoint_json(c) for c in await service.checkpoints(sid)]}
    if method == "agent-host/restore":
        if not (p.files or p.conversation):
            raise invalid_params("files", "a restore needs files, conversation or both")
        result = await service.restore(
            sid, p.seq, files=p.files, conversation=p.conversation, force=p.force
        )
        return convert.restore_json(result)
    if method == "agent-host/undoRestore":
        return convert.undo_json(await service.undo_restore(sid))
    await service.delete(sid)  # agent-host/delete: session/delete is not in the SDK's router
    return {}


_EXTENSIONS: dict[str, type[SessionParams]] = {
    "agent-host/checkpoints": SessionParams,
    "agent-host/restore": RestoreParams,
    "agent-host/undoRestore": SessionParams,
    "agent-host/delete": SessionParams,
}
EXTENSION_METHODS = [f"_{name}" for name in _EXTENSIONS]
"""As initialize advertises them (agentCapabilities._meta["agent-host"].methods)."""
