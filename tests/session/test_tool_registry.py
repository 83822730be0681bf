"""The tool registry: every built-in tool is one row with every field, the front
ends map every kind it uses, and an editing tool's preview is what it then does."""

from __future__ import annotations

from pathlib import Path
from typing import get_args, get_type_hints

import attrs
import pytest

from agent_host.acp.convert import ACP_KINDS, tool_kind, tool_title
from agent_host.rpc.types import PermissionParams
from agent_host.session.approval import ToolKind
from agent_host.session.mcp.tool import McpTool
from agent_host.session.tools import TOOLS, ToolContext, run_tool
from agent_host.session.tools.registry import ToolAction, tool_action
from agent_host.session.workspace import DiskWorkspace

WIRE_KINDS = get_args(get_type_hints(PermissionParams)["kind"])
"""The kinds the LSP dialect's permission request carries."""

SAMPLE_ARGUMENTS = {
    "path": "src/a.py",
    "pattern": "x",
    "command": "echo hi",
    "content": "new\n",
    "old_string": "a",
    "new_string": "b",
}


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_tool_has_every_field(tool):
    assert tool.name and len(tool.spec.description) > 40
    assert tool.spec.parameters["type"] == "object"
    assert tool.kind in get_args(ToolKind)
    assert tool.shown_as in get_args(ToolAction)
    assert callable(tool.run)
    title = tool.title(SAMPLE_ARGUMENTS)
    assert title and "\n" not in title and len(title) <= 80
    # A tool that edits a file says what it would leave there; no other does.
    assert (tool.preview is not None) == (tool.kind == "edit")


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_both_front_ends_map_its_kind(tool):
    assert tool_kind(tool.name) == ACP_KINDS[tool.shown_as]
    assert tool_title(tool.name, SAMPLE_ARGUMENTS) == tool.title(SAMPLE_ARGUMENTS)
    if tool.kind != "read":  # reads never ask
        assert tool.kind in WIRE_KINDS


def test_acp_maps_every_action_and_lsp_every_asking_kind():
    assert set(ACP_KINDS) == set(get_args(ToolAction))
    for kind in get_args(ToolKind):
        if kind != "read":  # the LSP dialect says external for both MCP kinds
            assert kind.removesuffix("_read") in WIRE_KINDS


def test_an_mcp_tool_has_the_same_shape():
    tool = McpTool("files", "write", "mcp__files__write", "Write a file", {"type": "object"}, False)
    assert tool.spec.name == "mcp__files__write" and tool.spec.parameters == {"type": "object"}
    assert tool.kind == "external"
    assert attrs.evolve(tool, read_only=True).kind == "external_read"
    assert tool.title({}) == tool_title(tool.qualified, {}) == "write (files)"
    assert tool_action(tool.qualified) == "other" and tool_kind(tool.qualified) == "other"


async def _after_running(root: Path, name: str, arguments: dict) -> str | None:
    workspace = DiskWorkspace([root])

    async def change_file(path: str, data: bytes | None) -> None:
        if data is None:
            await workspace.delete(path)
        else:
            await workspace.write_bytes(path, data)

    outcome = await run_tool(name, arguments, ToolContext(workspace, change_file))
    assert not outcome.is_error, outcome.output
    target = root / arguments["path"]
    return target.read_text() if target.exists() else None


@pytest.mark.parametrize(
    ("name", "arguments", "before"),
    [
        ("write_file", {"path": "a.txt", "content": "new\n"}, "old\n"),
        ("write_file", {"path": "a.txt", "content": "created\n"}, None),
        ("edit_file", {"path": "a.txt", "old_string": "b", "new_string": "B"}, "a b c\n"),
        (
            "edit_file",
            {"path": "a.txt", "old_string": "x", "new_string": "", "replace_all": True},
            "x1 x2 x3\n",
        ),
        ("delete_file", {"path": "a.txt"}, "gone\n"),
    ],
)
async def test_an_edit_preview_is_what_the_tool_then_does(tmp_path, name, arguments, before):
    if before is not None:
        (tmp_path / "a.txt").write_text(before)
    tool = next(t for t in TOOLS if t.name == name)
    assert tool.preview is not None
    proposed = tool.preview(arguments, before)
    after = await _after_running(tmp_path, name, arguments)
    assert proposed == (after if after is not None else "")
