"""Confining paths to the workspace roots, and the display paths shown for them.

Every path is checked against the roots with symlinks followed: a path the model
writes is never trusted to stay inside by its spelling alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import PathOutsideWorkspace, ToolError


def resolve_in_roots(roots: Sequence[Path], path: str) -> Path:
    """``path`` (relative to the first root, or absolute) with every symlink followed.

    A file that does not exist yet resolves through its nearest existing parent,
    so a symlinked directory cannot smuggle a new file outside the roots.
    """
    if not isinstance(path, str):
        raise ToolError(f"a path must be a string, not {type(path).__name__}")
    if not path:
        raise ToolError(f"the path is empty; give a path relative to {roots[0]}")
    if "\x00" in path:
        raise ToolError(f"the path {path!r} contains a NUL byte")
    # realpath (non-strict) resolves the existing prefix and appends the rest.
    real = Path(os.path.realpath(os.path.join(roots[0], path)))
    if not any(real.is_relative_to(root) for root in roots):
        where = ", ".join(str(r) for r in roots)
        shown = "" if str(real) == path else f" (resolves to {real})"
        raise PathOutsideWorkspace(
            f"{path!r}{shown} is outside the workspace; paths must stay inside {where}"
        )
    return real


def relative_in_roots(roots: Sequence[Path], path: Path) -> str:
    """Posix path relative to the first root; absolute for files of the other roots.

    The result resolves back to the same file, so events and tool output can be
    fed straight back to :meth:`Workspace.resolve`.
    """
    joined = os.path.join(roots[0], path)
    # The lexical form first: it is what the caller spelled (and free); the real
    # path only when the spelling went through a symlink into a root.
    for candidate in (Path(os.path.normpath(joined)), Path(os.path.realpath(joined))):
        if candidate.is_relative_to(roots[0]):
            return candidate.relative_to(roots[0]).as_posix()
        for root in roots[1:]:
            if candidate.is_relative_to(root):
                return candidate.as_posix()
    where = ", ".join(str(r) for r in roots)
    raise PathOutsideWorkspace(f"{path} is outside the workspace roots {where}")
