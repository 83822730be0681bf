"""Slash commands: rewind and friends typed in the prompt. Each is one row of
:data:`SLASH_COMMANDS` -- name, description, input hint, handler -- from which the
advertised ``available_commands``, the parser and the dispatch come.

A slash command runs instead of a turn and answers with an agent message, text a
person reads; clients that build their own UI use the ``_agent-host/*`` extension
methods (:mod:`.extensions`), which answer with JSON and raise typed errors.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import attrs
from acp import schema as s

from ..service import SessionService
from ..service.text import describe_files, local_time, shorten
from ..session.checkpoints import Checkpoint, NothingToUndo


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


async def _checkpoints(service: SessionService, session_id: str, arg: str) -> str:
    return _list(await service.checkpoints(session_id))


async def _undo_rewind(service: SessionService, session_id: str, arg: str) -> str:
    try:
        undone = await service.undo_restore(session_id)
    except NothingToUndo:
        return "Nothing to undo: this session has no rewind to take back."
    return f"Undid the last rewind: restored {describe_files(undone.restored_files)}." + (
        _conflicts(undone.conflicts)
    )


async def _compact(service: SessionService, session_id: str, arg: str) -> str:
    done = await service.compact(session_id, arg or None)
    if not done.compacted:
        return "Nothing to compact: the conversation is as short as a summary would be."
    return f"Compacted the conversation: about {done.before} → {done.after} tokens."


async def _fork(service: SessionService, session_id: str, arg: str) -> str:
    fork_id = await service.fork(session_id)
    return f"Forked this session as {fork_id}; load it to continue there."


# -- the table


@attrs.frozen
class SlashCommand:
    name: str
    """Typed as ``/name``."""
    description: str
    handler: Callable[[SessionService, str, str], Awaitable[str]]
    """``(service, session_id, argument)`` → what it did, for the user to read."""
    hint: str | None = None
    """What the argument is; None: the command takes none."""

    def available(self) -> s.AvailableCommand:
        """As ``available_commands_update`` advertises it."""
        wanted = None
        if self.hint is not None:
            wanted = s.AvailableCommandInput(root=s.UnstructuredCommandInput(hint=self.hint))
        return s.AvailableCommand(name=self.name, description=self.description, input=wanted)


SLASH_COMMANDS = (
    SlashCommand(
        "checkpoints",
        "List this session's checkpoints: one per prompt, with the files it changed",
        _checkpoints,
    ),
    SlashCommand(
        "rewind",
        "Return files and conversation to just before a prompt (undo with /undo-rewind)",
        _rewind,
        hint="a checkpoint's seq, or -N for N prompts back",
    ),
    SlashCommand("undo-rewind", "Undo the last rewind", _undo_rewind),
    SlashCommand(
        "compact",
        "Summarise the older part of the conversation",
        _compact,
        hint="what the summary should keep",
    ),
    SlashCommand("fork", "Copy this session into a new one", _fork),
)

COMMANDS = [command.available() for command in SLASH_COMMANDS]
"""The session's ``available_commands``."""

_BY_NAME = {command.name: command for command in SLASH_COMMANDS}
_TYPED = re.compile(r"/(?P<name>\S+)(?:\s+(?P<arg>.*))?", re.DOTALL)


def parse(text: str) -> tuple[str, str] | None:
    """``(name, argument)`` when the prompt is one of our slash commands."""
    found = _TYPED.fullmatch(text.strip())
    if found is None or found["name"] not in _BY_NAME:
        return None
    return found["name"], (found["arg"] or "").strip()


async def run(service: SessionService, session_id: str, name: str, arg: str) -> str:
    """What the command ``name`` (one :func:`parse` returned) did, for the user to read."""
    return await _BY_NAME[name].handler(service, session_id, arg)
