"""Engine values as ACP values, and ACP prompts as engine input: plain functions.

Tool calls are shown by kind (read, edit, execute ...), with a title a person
reads ("Edit src/a.py") and the file's absolute location, so an editor can open it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from acp import schema as s
from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)

from ..service import ContextItem
from ..service.text import checkpoint_label, local_time
from ..session import events as ev
from ..session.changes import FileDiff
from ..session.checkpoints import Checkpoint
from ..session.conversation import prompt_content
from ..session.restore import RestoreResult, UndoResult
from ..session.restore_plan import RestorePreview
from ..session.store import SessionInfo
from ..session.tools.registry import ToolAction, tool_action, tool_title
from .errors import MODEL_ERROR, RequestError, invalid_params

ACP_KINDS: dict[ToolAction, s.ToolKind] = {
    "read": "read",
    "search": "search",
    "edit": "edit",
    "delete": "delete",
    "execute": "execute",
    "other": "other",
}
"""What each tool does (its row's action, :mod:`agent_host.session.tools.registry`)
as ACP's tool kinds."""

STOP_REASONS: dict[str, s.StopReason] = {
    "end_turn": "end_turn",
    "cancelled": "cancelled",
    "max_turns": "max_turn_requests",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


def tool_kind(name: str) -> s.ToolKind:
    return ACP_KINDS[tool_action(name)]


def locations(arguments: dict[str, Any], root: Path) -> list[s.ToolCallLocation] | None:
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return None
    return [s.ToolCallLocation(path=str(root / path))]


def tool_call_start(call: ev.ToolCall, root: Path) -> s.ToolCallStart:
    return start_tool_call(
        call.call_id,
        tool_title(call.name, call.arguments),
        kind=tool_kind(call.name),
        status="pending",
        locations=locations(call.arguments, root),
        raw_input=call.arguments,
    )


def text_content(text: str) -> s.ContentToolCallContent:
    return tool_content(text_block(text))


def diff_content(root: Path, path: str, old: str | None, new: str) -> s.FileEditToolCallContent:
    return s.FileEditToolCallContent(type="diff", path=str(root / path), old_text=old, new_text=new)


def tool_call_done(
    result: ev.ToolResult,
    earlier: Sequence[
        s.ContentToolCallContent | s.FileEditToolCallContent | s.TerminalToolCallContent
    ],
) -> s.ToolCallProgress:
    # An update's content replaces the call's: keep the diffs and terminal shown while it ran.
    return update_tool_call(
        result.call_id,
        status="failed" if result.is_error else "completed",
        content=[*earlier, text_content(result.output)],
    )


def replay(timeline: Iterable[ev.Event], root: Path) -> list[Any]:
    """The conversation as the session/update notifications a live client saw."""
    updates: list[Any] = []
    for event in timeline:
        if isinstance(event, ev.UserPrompt):
            updates.append(update_user_message_text(prompt_content(event)))
        elif isinstance(event, ev.AssistantMessage) and event.text:
            updates.append(update_agent_message_text(event.text))
        elif isinstance(event, ev.ToolCall):
            updates.append(tool_call_start(event, root))
        elif isinstance(event, ev.ToolResult):
            updates.append(tool_call_done(event, ()))
    return updates


def prompt_input(blocks: Sequence[Any]) -> tuple[str, list[ContextItem]]:
    """The prompt's text (resource links mentioned in it) and its embedded context."""
    parts: list[str] = []
    context: list[ContextItem] = []
    for i, block in enumerate(blocks):
        if isinstance(block, s.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, s.ResourceContentBlock):
            parts.append(f"[@{block.name}]({block.uri})")
        elif isinstance(block, s.EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, s.TextResourceContents):
                raise invalid_params(f"prompt[{i}].resource", "only text resources are supported")
            context.append(ContextItem(resource.text, resource.uri))
        else:
            # Not advertised (promptCapabilities.image and audio are false).
            raise invalid_params(f"prompt[{i}]", f"{block.type} content is not supported")
    return "\n".join(parts), context


def stop_reason(engine: str) -> s.StopReason:
    found = STOP_REASONS.get(engine)
    if found is None:  # "error": the engine raises rather than returns it
        raise RequestError(MODEL_ERROR, f"the turn ended with {engine!r}")
    return found


def session_info(info: SessionInfo) -> s.SessionInfo:
    return s.SessionInfo(
        session_id=info.id,
        cwd=info.workspace,
        title=info.title or None,
        updated_at=local_time(info.updated_at),
    )


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "seq": checkpoint.seq,
        "prompt": checkpoint.prompt,
        "createdAt": local_time(checkpoint.created_at),
        "files": checkpoint.files,
        "fromCommands": checkpoint.from_commands,
        "notCaptured": checkpoint.not_captured,
        "externalTools": checkpoint.external_tools,
        "unconfined": checkpoint.unconfined,
        "ordinal": checkpoint.ordinal,
        "label": checkpoint_label(checkpoint.ordinal, checkpoint.prompt),
    }


def restore_json(result: RestoreResult) -> dict[str, Any]:
    """The LSP dialect's session/restore result, field for field."""
    return {
        "restoredFiles": result.restored_files,
        "removedEvents": result.removed_events,
        "unrevertedBuffers": result.unreverted_buffers,
        "conflicts": result.conflicts,
        "notCaptured": result.not_captured,
        "unconfined": result.unconfined,
        "notRestored": result.not_restored,
        "messagesRemoved": result.messages_removed,
        "preview": None,
    }


def dry_run_json(preview: RestorePreview) -> dict[str, Any]:
    """A dry run's session/restore result: nothing done, ``preview`` says what would be."""
    return {
        "restoredFiles": [],
        "removedEvents": 0,
        "unrevertedBuffers": [],
        "conflicts": [],
        "notCaptured": [],
        "unconfined": [],
        "notRestored": {},
        "messagesRemoved": 0,
        "preview": preview_json(preview),
    }


def preview_json(preview: RestorePreview) -> dict[str, Any]:
    """The LSP dialect's RestorePreview, field for field."""
    return {
        "files": [
            {
                **file_diff_json(f),
                "conflict": f.conflict,
                "userDiff": f.user_diff,
                "agentText": f.agent_text,
            }
            for f in preview.files
        ],
        "messagesRemoved": preview.messages_removed,
        "checkpoint": checkpoint_json(preview.checkpoint),
        "notCaptured": preview.not_captured,
        "unconfined": preview.unconfined,
    }


def file_diff_json(diff: FileDiff) -> dict[str, Any]:
    """The LSP dialect's FileDiff, field for field."""
    return {
        "path": diff.path,
        "action": diff.action,
        "binary": diff.binary,
        "diff": diff.diff,
        "added": diff.added,
        "removed": diff.removed,
        "before": diff.before,
        "after": diff.after,
        "source": diff.source,
        "oldPath": diff.old_path,
    }


def undo_json(result: UndoResult) -> dict[str, Any]:
    return {
        "restoredFiles": result.restored_files,
        "restoredEvents": result.restored_events,
        "unrevertedBuffers": result.unreverted_buffers,
        "conflicts": result.conflicts,
        "notRestored": result.not_restored,
        "messagesRestored": result.messages_restored,
    }


def mcp_servers(servers: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """ACP's McpServer models as the dicts the engine parses (the same shape). An
    empty list -- what clients send when the user set none -- keeps the agent's own
    (--mcp-config)."""
    if not servers:
        return None
    return [server.model_dump(by_alias=True, exclude_none=True) for server in servers]
