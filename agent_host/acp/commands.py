"""Slash commands: rewind and friends typed in the prompt. Each is one row of
:data:`SLASH_COMMANDS` -- name, description, input hint, handler -- from which the
advertised ``available_commands``, the parser and the dispatch come.

A slash command runs instead of a turn and answers with an agent message, text a
person reads; clients that build their own UI use the ``_agent-host/*`` extension
methods (:mod:`.extensions`), which answer with JSON and raise typed errors.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from acp import schema as s
from acp.helpers import start_tool_call

from ..service import SessionService
from ..service.text import (
    checkpoint_label,
    count,
    describe_files,
    local_time,
    outside_changes,
    shorten,
    unconfined_runs,
)
from ..session.checkpoints import Checkpoint, NothingToUndo
from ..session.errors import UndoWouldKeep
from . import convert


def _list(checkpoints: list[Checkpoint]) -> str:
    if not checkpoints:
        return "No checkpoints yet: each prompt makes one."
    lines = ["Checkpoints (rewind with /rewind SEQ):"]
    for cp in checkpoints:
        line = (
            f"- {cp.seq}  {local_time(cp.created_at)}  {shorten(cp.prompt, 60)!r}: "
            f"{describe_files(cp.files)}"
        )
        if cp.unconfined:
            line += f"; ran without the sandbox: {unconfined_runs(cp.unconfined)}"
        lines.append(line)
    return "\n".join(lines)


FORCE = "--force"
PREVIEW = "--preview"
ONLY = "--only"


@attrs.frozen
class Answer:
    """What a slash command did: the text a person reads, and the session updates
    shown before it (a preview's diffs, as a tool call's content)."""

    text: str
    shown: list[Any] = attrs.field(factory=list)


@attrs.frozen
class RewindOptions:
    target: str
    force: bool = False
    preview: bool = False
    only: list[str] | None = None


def _rewind_options(arg: str) -> RewindOptions | str:
    """The rewind's target and options, or what is wrong with them."""
    words = arg.split()
    rest: list[str] = []
    force = preview = False
    only: list[str] | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if word == FORCE:
            force = True
        elif word == PREVIEW:
            preview = True
        elif word == ONLY or word.startswith(ONLY + "="):
            value = word.partition("=")[2]
            if not value and i + 1 < len(words):
                i += 1
                value = words[i]
            only = [p for p in value.split(",") if p]
            if not only:
                return f"{ONLY} needs the files to rewind, comma-separated: {ONLY} a.py,b.py"
        else:
            rest.append(word)
        i += 1
    return RewindOptions(" ".join(rest), force, preview, only)


def _forced(arg: str) -> tuple[str, bool]:
    """The argument without ``--force``, and whether it was there."""
    words = arg.split()
    return " ".join(w for w in words if w != FORCE), FORCE in words


async def _rewind(service: SessionService, session_id: str, arg: str) -> str | Answer:
    options = _rewind_options(arg)
    if isinstance(options, str):
        return options
    arg, force = options.target, options.force
    checkpoints = await service.checkpoints(session_id)
    target = _target(checkpoints, arg or "-1")
    if target is None and force and arg.isdigit() and not options.preview:
        # "/rewind N --force" after "/rewind N" kept files: N's prompt is hidden by
        # that rewind; it is taken back, then made again with force.
        if await service.rewound_to(session_id) == int(arg):
            await service.undo_restore(session_id)
            checkpoints = await service.checkpoints(session_id)
            target = _target(checkpoints, arg)
    if not checkpoints:
        return "Nothing to rewind to: this session has no prompts yet."
    if target is None:
        seqs = ", ".join(str(cp.seq) for cp in checkpoints)
        return f"No checkpoint {arg!r}: use a seq ({seqs}) or -N for N prompts back."
    if options.preview:
        return await _preview(service, session_id, target, options.only)
    result = await service.restore(session_id, target.seq, force=force, paths=options.only)
    text = (
        f"Rewound to just before {_named(target)}: "
        f"restored {describe_files(result.restored_files)}; "
        f"{count(result.messages_removed, 'message')} removed."
    )
    if result.not_captured:
        text += f" Not restored (never captured): {', '.join(result.not_captured)}."
    if result.unconfined:
        text += " " + outside_changes(result.unconfined)
    text += _not_restored(result.not_restored)
    text += " Load the session again to see the conversation."
    # Last, so that the message ends with exactly what to type.
    only = f" {ONLY} {','.join(options.only)}" if options.only else ""
    return text + _conflicts(result.conflicts, f"/rewind {target.seq}{only} {FORCE}")


def _named(checkpoint: Checkpoint) -> str:
    """``'add a test' (checkpoint 21)``: its prompt, and the seq /rewind takes."""
    return f"{shorten(checkpoint.prompt, 60)!r} (checkpoint {checkpoint.seq})"


async def _preview(
    service: SessionService, session_id: str, target: Checkpoint, only: list[str] | None
) -> Answer:
    """What ``/rewind`` would do, nothing written: a diff per file (a tool call's
    content, which editors show as diffs), conflicts named, and what to type."""
    preview = await service.preview_restore(session_id, target.seq, paths=only)
    root = service.held(session_id).roots[0]
    blocks: list[Any] = []
    lines: list[str] = []
    for f in preview.files:
        where = f"{f.path} ({f.action})"
        if f.conflict:
            where += ": you changed it since the agent did; kept unless --force"
        lines.append(f"- {where}")
        if (
            f.binary
            or (f.before is None and f.action != "added")
            or (f.after is None and f.action != "deleted")
        ):
            blocks.append(convert.text_content(f"{f.path}: binary or too large to show"))
            continue
        blocks.append(convert.diff_content(root, f.path, f.before, f.after or ""))
        if f.conflict and f.user_diff:
            blocks.append(
                convert.text_content(
                    f"{f.path}: your change, which --force would discard:\n{f.user_diff}"
                )
            )
    title = f"Preview: rewind to just before {checkpoint_label(target.ordinal, target.prompt)}"
    shown = start_tool_call(
        f"rewind-preview-{uuid.uuid4().hex[:12]}",
        title,
        kind="read",
        status="completed",
        content=blocks,
        locations=[s.ToolCallLocation(path=str(root / f.path)) for f in preview.files],
    )
    conflicts = [f.path for f in preview.files if f.conflict]
    only_arg = f" {ONLY} {','.join(only)}" if only else ""
    text = (
        f"Rewinding to just before {_named(target)} would change "
        f"{describe_files([f.path for f in preview.files])} and remove "
        f"{count(preview.messages_removed, 'message')}. Nothing was changed yet."
    )
    if lines:
        text += "\n" + "\n".join(lines)
    if preview.not_captured:
        text += f"\nNot restorable (never captured): {', '.join(preview.not_captured)}."
    if preview.unconfined:
        text += "\n" + outside_changes(preview.unconfined, done=False)
    text += f"\nTo rewind: /rewind {target.seq}{only_arg}"
    if conflicts:
        text += (
            f" (keeps {', '.join(conflicts)}; to overwrite: /rewind {target.seq}{only_arg} {FORCE})"
        )
    return Answer(text, [shown])


def _target(checkpoints: list[Checkpoint], arg: str) -> Checkpoint | None:
    if re.fullmatch(r"-\d+", arg):
        back = int(arg[1:])
        return checkpoints[-back] if 1 <= back <= len(checkpoints) else None
    if arg.isdigit():
        return next((cp for cp in checkpoints if cp.seq == int(arg)), None)
    return None


def _conflicts(paths: list[str], force: str) -> str:
    """The files kept as the user left them, and exactly what to type to overwrite them."""
    if not paths:
        return ""
    return (
        f" Kept as they are (you or another program changed them since the agent "
        f"wrote them): {', '.join(paths)}. To overwrite them: {force}"
    )


def _not_restored(refused: dict[str, str]) -> str:
    """The files the editor did not write, each with the editor's reason."""
    if not refused:
        return ""
    each = "; ".join(f"{path} ({reason})" for path, reason in refused.items())
    return f" Not restored (the editor did not write them): {each}."


async def _checkpoints(service: SessionService, session_id: str, arg: str) -> str:
    return _list(await service.checkpoints(session_id))


async def _undo_rewind(service: SessionService, session_id: str, arg: str) -> str:
    _, force = _forced(arg)
    try:
        # Whole or not at all: a partial undo could not be forced afterwards.
        undone = await service.undo_restore(session_id, force=force, partial=False)
    except NothingToUndo:
        return "Nothing to undo: this session has no rewind to take back."
    except UndoWouldKeep as kept:
        return (
            f"Did not undo the rewind: {', '.join(kept.paths)} changed since the rewind "
            f"wrote them (by you or another program). To undo it anyway, overwriting "
            f"them: /undo-rewind {FORCE}"
        )
    return (
        f"Undid the last rewind: restored {describe_files(undone.restored_files)}; "
        f"{count(undone.messages_restored, 'message')} back."
        + _not_restored(undone.not_restored)
        + _left(undone.conflicts)
    )


def _left(paths: list[str]) -> str:
    """An undo's files the rewind never wrote (it kept them): nothing to take back."""
    return f" Left as they are (the rewind had kept them): {', '.join(paths)}." if paths else ""


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
    handler: Callable[[SessionService, str, str], Awaitable[str | Answer]]
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
        hint="a checkpoint's seq, or -N for N prompts back; --preview shows the diffs "
        "first; --only a.py,b.py rewinds those files alone; --force overwrites files you changed",
    ),
    SlashCommand(
        "undo-rewind",
        "Undo the last rewind (--force: also over files changed since)",
        _undo_rewind,
        hint="--force to overwrite files changed since the rewind",
    ),
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


async def run(service: SessionService, session_id: str, name: str, arg: str) -> Answer:
    """What the command ``name`` (one :func:`parse` returned) did, for the user to read."""
    said = await _BY_NAME[name].handler(service, session_id, arg)
    return said if isinstance(said, Answer) else Answer(said)
