"""Listing a workspace's files: a walk that honours .gitignore, filtered by a glob.

.gitignore files are read with ``pathspec``; globs are matched with ``wcmatch``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ToolError
from .paths import relative_in_roots

if TYPE_CHECKING:  # imported where used: they cost start-up time
    import pathspec
    from wcmatch import glob

IgnoreStack = tuple[tuple[str, "pathspec.GitIgnoreSpec"], ...]
"""The .gitignore specs that apply in a folder, outermost first, each with the
root-relative folder it was read in ("" for the root)."""

GLOB_EXPANSION_LIMIT = 1000
"""The most patterns a glob's braces may expand to (``{a,b}{c,d}`` is four):
each one is a regular expression every listed path is matched against."""

# Bash with globstar, on posix paths: '*' matches dotfiles too, as in .gitignore and rg.
# No NEGATE and no EXTGLOB, so '!' and '@(' are literal characters.


def list_in_roots(roots: Sequence[Path], pattern: str | None, limit: int) -> list[str]:
    """Up to ``limit`` sorted display paths of the files :func:`walk_files` finds in
    ``roots`` whose root-relative path matches ``pattern`` (every file if None)."""
    found: set[str] = set()
    for index, root in enumerate(roots):
        matcher = None if pattern is None else compile_glob(_pattern_in_root(pattern, root))
        for rel in walk_files(root, roots):
            if matcher is not None and not matcher.match(rel):
                continue
            # Roots may nest; the display path picks one spelling so nothing is listed twice.
            found.add(rel if index == 0 else relative_in_roots(roots, root / rel))
    return sorted(found)[: max(limit, 0)]


def _pattern_in_root(pattern: str, root: Path) -> str:
    # Models often glob with absolute paths; make those relative to the root.
    prefix = root.as_posix().rstrip("/") + "/"
    return "/" + pattern[len(prefix) :] if pattern.startswith(prefix) else pattern


def compile_glob(pattern: str) -> glob.WcMatcher[str]:
    """A matcher whose ``.match(path)`` tests a root-relative posix path against a glob.

    wcmatch does the matching, as bash does with globstar: ``*`` and ``?`` stay
    within one path segment, ``**`` spans directories (``**/`` also matches none),
    ``[abc]``, ``[!abc]``, ``{a,b}`` and ``\\`` escapes work as in shells, and
    dotfiles are not special. A pattern with no ``/`` matches file names at any
    depth (``*.py``), as in .gitignore and rg; a leading ``/`` anchors the pattern
    at the root; a trailing ``/`` means everything under that directory.
    """
    from wcmatch import glob

    # wcmatch raises it from a private module only; it is the one error compile()
    # raises for the flags used here (NOABSOLUTE, which raises ValueError, is unset).
    from wcmatch._wcparse import PatternLimitException

    pat = pattern.strip()
    while pat.startswith("./"):
        pat = pat[2:]
    if pat.endswith("/"):
        pat += "**"
    # Decided before braces expand, so every alternative of '{a,b/c}' is anchored.
    base = glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB | glob.FORCEUNIX
    flags = base if "/" in pat else base | glob.MATCHBASE
    pat = pat.lstrip("/")
    if not pat:
        raise ToolError(f"the glob pattern {pattern!r} is empty")
    try:
        return glob.compile(pat, flags=flags, limit=GLOB_EXPANSION_LIMIT)
    except PatternLimitException:
        raise ToolError(
            f"invalid glob pattern {pattern!r}: its braces expand to more than "
            f"{GLOB_EXPANSION_LIMIT:,} patterns; give fewer alternatives, or list "
            "with several patterns one at a time"
        ) from None


def walk_files(root: Path, roots: Sequence[Path]) -> Iterator[str]:
    """Root-relative posix paths of the files under ``root`` that git would not ignore.

    Each directory's ``.gitignore`` applies below it, deeper files overriding
    shallower ones as in git; an ignored directory is not entered (git cannot
    re-include a file under one either). ``.git`` is always skipped, symlinked
    directories are not followed, and symlinked files are listed only when they
    point at a file inside the workspace.
    """
    base: IgnoreStack = ()
    exclude = load_gitignore(root / ".git" / "info" / "exclude")
    if exclude is not None:
        base = (("", exclude),)
    stack: list[tuple[str, IgnoreStack]] = [("", base)]
    while stack:
        rel_dir, specs = stack.pop()
        abs_dir = root / rel_dir if rel_dir else root
        spec = load_gitignore(abs_dir / ".gitignore")
        if spec is not None:
            specs = (*specs, (rel_dir, spec))
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            continue  # an unreadable directory should not fail the whole listing
        for entry in entries:
            if entry.name == ".git":
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not gitignored(specs, rel, is_dir=True):
                        stack.append((rel, specs))
                    continue
                if entry.is_symlink():
                    target = Path(os.path.realpath(entry.path))
                    if not target.is_file() or not any(target.is_relative_to(r) for r in roots):
                        continue
                elif not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if not gitignored(specs, rel, is_dir=False):
                yield rel


def load_gitignore(path: str | os.PathLike[str]) -> pathspec.GitIgnoreSpec | None:
    """The patterns of the .gitignore (or info/exclude) file at ``path``; None if it is
    unreadable or has none."""
    import pathspec

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    return spec if len(spec) else None


def gitignored(specs: IgnoreStack, rel: str, is_dir: bool) -> bool:
    """Whether git ignores the root-relative path ``rel`` under ``specs``."""
    # The deepest .gitignore with a matching pattern decides, as in git.
    for prefix, spec in reversed(specs):
        sub = rel[len(prefix) + 1 :] if prefix else rel
        result = spec.check_file(sub + "/" if is_dir else sub)
        if result.include is not None:
            return bool(result.include)
    return False
