"""The arrows of docs/architecture.md, checked on the source: front ends → service →
session, never back; the two front ends never import each other, the CLI, or the
other's wire contract (``rpc`` is the LSP dialect's)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agent_host"

FORBIDDEN = {
    # package: what none of its modules may import
    "session": (
        "agent_host.server",
        "agent_host.acp",
        "agent_host.rpc",
        "agent_host.cli",
        "agent_host.service",
        "pygls",
        "lsprotocol",
        "acp",
    ),
    "service": (
        "agent_host.server",
        "agent_host.acp",
        "agent_host.rpc",
        "agent_host.cli",
        "pygls",
        "lsprotocol",
        "acp",
    ),
    "acp": ("agent_host.server", "agent_host.rpc", "agent_host.cli", "pygls", "lsprotocol"),
    "server": ("agent_host.acp", "agent_host.cli", "acp"),
    "jsonrpc": ("agent_host.server", "agent_host.acp", "agent_host.rpc", "agent_host.cli"),
}


def imported(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports, relative imports resolved."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def violations(layer: str) -> list[str]:
    found = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in sorted(imported(path)):
            for banned in FORBIDDEN[layer]:
                if name == banned or name.startswith(banned + "."):
                    found.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_only_downwards(layer: str) -> None:
    assert violations(layer) == []
