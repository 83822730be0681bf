"""Files whose content is a command: writing one is running that command later.

``write_file .git/config`` with ``core.fsmonitor = "curl … | sh"`` runs the command
at the next ``git status`` -- and editors run git by themselves. So a file tool's
change to one of these is approved as a command is (asked under ``auto-edit`` and
``ask``, refused under ``read-only``, run under ``auto``), whatever the tool.

The test for the list: some program the user did not ask to run code (git, the
editor, the shell, the user's other agents) runs a command written in the file,
or the file itself, when it next starts or looks at the workspace. Each entry
matches the path itself and everything below it, at any depth (a nested clone's
``.git``, a dotfiles folder); see ``docs/security.md`` for what is left out and why.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

PROTECTED_PATHS: dict[str, str] = {
    # git: config (core.fsmonitor, core.pager, core.sshCommand, filter and diff
    # drivers, credential helpers, aliases, include.path), hooks, info/attributes
    # (routes files through the config's filters). An editor's git view runs
    # `git status` unasked. A `.git` *file* (a worktree or submodule) names the
    # git folder, so writing it points git at a config written elsewhere.
    ".git": "git runs the commands its config and hooks name, on its own in an editor",
    # Hooks kept in the work tree, pointed to by core.hooksPath (husky, pre-commit).
    ".husky": "git hooks run by git (core.hooksPath)",
    ".pre-commit-config.yaml": "commands the pre-commit git hook runs",
    # Editors' workspace settings name programs they start on opening the folder:
    # interpreters, language servers, formatters, tasks run on folder open.
    ".vscode": "VS Code's workspace settings and tasks name programs it runs",
    ".idea": "JetBrains run configurations and tool paths",
    ".zed": "Zed's workspace settings name language servers and tasks",
    ".nvim.lua": "Neovim runs it on opening the folder ('exrc')",
    ".nvimrc": "Neovim runs it on opening the folder ('exrc')",
    ".exrc": "Vim and Neovim run it on opening the folder ('exrc')",
    # direnv runs .envrc on entering the folder (once allowed; many allow by habit).
    ".envrc": "direnv runs it on entering the folder",
    # Other coding agents' config: hooks and MCP servers are commands they start.
    ".claude": "Claude Code's hooks and MCP servers are commands",
    ".mcp.json": "MCP servers an agent starts in this folder are commands",
    ".codex": "Codex's config names commands and MCP servers",
    # A home folder opened as the workspace: the shell and git read these.
    ".gitconfig": "git's user config: the same commands as .git/config",
    ".config/git": "git's user config: the same commands as .git/config",
    ".bashrc": "the shell runs it",
    ".bash_profile": "the shell runs it",
    ".bash_login": "the shell runs it",
    ".profile": "the shell runs it",
    ".zshrc": "the shell runs it",
    ".zshenv": "the shell runs it",
    ".zprofile": "the shell runs it",
    ".zlogin": "the shell runs it",
    ".ssh": "ssh config (ProxyCommand, LocalCommand) and authorized_keys",
}
"""Path (components, ``/``-separated) -> why writing under it is running a command."""

# Code points HFS+ ignores in names (git refuses ``.g\u200cit`` for the same reason).
_IGNORED = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)


def _fold(name: str) -> str:
    """A name as a case-insensitive filesystem (macOS, Windows) compares it: case
    and Unicode normalization ignored, and what HFS+ and Windows drop from names
    (ignorable code points, trailing dots and spaces)."""
    folded = unicodedata.normalize("NFC", name.translate(_IGNORED)).casefold()
    return folded.rstrip(". ") or folded


_RULES: list[tuple[tuple[str, ...], str]] = [
    (tuple(_fold(part) for part in PurePosixPath(path).parts), why)
    for path, why in PROTECTED_PATHS.items()
]


def protected_reason(roots: Sequence[Path], real: Path) -> str | None:
    """Why ``real`` (a resolved path: symlinks followed) is protected, else None.

    Matched on its path under the root that holds it, case-insensitively on every
    filesystem: asking once too often for ``.GIT/config`` on Linux costs little.
    """
    for root in roots:
        if real.is_relative_to(root):
            parts = tuple(_fold(part) for part in real.relative_to(root).parts)
            break
    else:
        return None
    for rule, why in _RULES:
        width = len(rule)
        for at in range(len(parts) - width + 1):
            if parts[at : at + width] == rule:
                shown = "/".join(real.relative_to(root).parts[: at + width])
                return f"{shown}: {why}"
    return None
