"""The folder a session's files belong to, and the workspace as the session names them.

A session logs its files relative to the folder it was started in (its
session_started). A server may have that folder open behind others, or not at
all: every operation that touches the session's files -- a turn's tools and
commands, restore, undo, a crash's leftovers -- goes through the workspace rooted
at that folder (:func:`~.workspace.rooted.rooted_at`), or is refused.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import events as ev
from .errors import WorkspaceMismatch
from .workspace.rooted import rooted_at

if TYPE_CHECKING:
    from .state import SessionState
    from .workspace import Workspace


def session_started(
    folder: str | None, model: str | None, title: str | None = None
) -> ev.SessionStarted:
    """A session's first event, built here only: the folder its files belong to
    (for a new session, its workspace's first root), its model and title."""
    return ev.SessionStarted(workspace=folder, model=model, title=title)


def folder_of(events: Sequence[ev.Event]) -> str:
    """The folder a log's session_started names ("": none does)."""
    started = next((e for e in events[:2] if type(e) is ev.SessionStarted), None)
    return (started.workspace if started else None) or ""


async def session_files(
    state: SessionState, workspace: Workspace, *, to: str, unrecorded: str | None
) -> Workspace:
    """``workspace`` with relative paths starting at the folder the session was
    started in, wherever that folder is among its roots.

    Refuses (WorkspaceMismatch) when that folder is not one of the roots, naming
    it and what opening it lets the caller do (``to``): a session resumed from
    another project would otherwise work on that project's files of the same
    names. A log that does not say its folder (an older or damaged one) is refused
    with ``unrecorded`` as the advice; with None, the workspace is taken as it is
    (its first root, where such a log's turns always ran).
    """
    folder = await state.started_in()
    if not folder:
        if unrecorded is None:
            return workspace
        raise WorkspaceMismatch(
            f"session {state.id!r} does not say which folder it was started in (its log "
            "has no session_started with a workspace), so where its files belong is "
            f"unknown; nothing was written. {unrecorded}"
        )
    root = Path(os.path.realpath(folder))
    if root not in workspace.roots:
        where = ", ".join(str(r) for r in workspace.roots)
        raise WorkspaceMismatch(
            f"session {state.id!r} was started in {folder}, and its files belong there; "
            f"this workspace is {where}. Open {folder} to {to}"
        )
    return rooted_at(workspace, root)
