"""The folders an agent works in, and the one way tools and restore touch them.

Tools read, write and run commands only through a :class:`Workspace`, so the same
tools work on plain folders (:class:`DiskWorkspace`, for the CLI and CI) and inside
an editor, where an ``EditorWorkspace`` sends writes through LSP
``workspace/applyEdit`` so they land in open buffers.

- :mod:`.base`: the :class:`Workspace` protocol and :class:`CommandResult`.
- :mod:`.paths`: confining paths to the roots, symlinks followed, and display paths.
- :mod:`.disk`: :class:`DiskWorkspace` and its atomic file operations.
- :mod:`.delegating`: the disk's workspace but for what a client shows (the
  front ends' editor workspaces' base).
- :mod:`.dirfd`: opening a path under a root one folder at a time, never through
  a symlink, so a folder swapped for one mid-write cannot redirect the write.
- :mod:`.listing`: the .gitignore-aware file walk and glob matching.
- :mod:`.shell`: running commands in their own session, under the environment policy.
- :mod:`.processes`: ending what a command left running, finding what it detached.
"""

from .base import (
    BUFFER_ENCODING,
    BUFFER_ERRORS,
    CommandResult,
    IfContent,
    Workspace,
    as_normalised,
    unsaved_bytes,
)
from .delegating import DelegatingWorkspace, unsynced_buffers
from .disk import DiskWorkspace
from .listing import compile_glob, list_in_roots, walk_files
from .paths import relative_in_roots, resolve_in_roots
from .shell import run_shell

__all__ = [
    "BUFFER_ENCODING",
    "BUFFER_ERRORS",
    "CommandResult",
    "DelegatingWorkspace",
    "DiskWorkspace",
    "IfContent",
    "Workspace",
    "as_normalised",
    "compile_glob",
    "list_in_roots",
    "relative_in_roots",
    "resolve_in_roots",
    "run_shell",
    "unsaved_bytes",
    "unsynced_buffers",
    "walk_files",
]
