"""Who may run which tool: the approval policy and the permission callback.

``auto`` runs everything; ``auto-edit`` asks before commands; ``ask`` asks before
edits and commands; ``read-only`` refuses both. Reads never ask. A tool of an MCP
server (``external``) is asked for under ``ask`` and ``auto-edit`` -- what it does is
the server's to say, not ours to know -- and ``read-only`` allows only those that
declare themselves read-only (``external_read``). An edit of a protected path
(:mod:`.protected_paths`: ``.git/config``, hooks, editor settings -- a command in
disguise) is approved as a command is, and asked for each time: an answer
remembered for the tool is neither used nor kept for it. A callback that is
missing, fails or times out is a rejection, never an approval.

Running a command again without the sandbox, after the sandbox stopped it, is
asked for under every policy, ``auto`` too (which approves what runs confined, not
its escape), and refused outright under ``read-only``; "always" is remembered for
that command (its exact text), not for the tool.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_args

import attrs

from .errors import InvalidArgument

Approval = Literal["ask", "auto-edit", "auto", "read-only"]
APPROVALS: tuple[Approval, ...] = get_args(Approval)
Decision = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
ToolKind = Literal["read", "edit", "command", "external", "external_read"]
"""What the policy sorts a tool as (each tool's row in :mod:`.tools.registry` says).
external: a tool of an MCP server; external_read: one that says it only reads."""

log = logging.getLogger(__name__)


@attrs.define
class PermissionRequest:
    session_id: str
    tool: str
    arguments: dict[str, Any]
    kind: ToolKind
    diff: str | None = None
    """A unified diff of the change, for edits."""
    before: str | None = None
    """For an edit of a text file: its text now (None: it does not exist, or is not text)."""
    after: str | None = None
    """For an edit: the text the tool would leave (its preview); None when unknown."""
    call_id: str | None = None
    """The model's id of the tool call asked about (as in its tool_call event)."""
    protected: str | None = None
    """For an edit of a protected path: which, and why it is a command in disguise."""
    sandbox_denial: str | None = None
    """For a command the sandbox stopped: why. Approving runs it again without the
    sandbox."""


PermissionCallback = Callable[[PermissionRequest], Awaitable[Decision]]


def check_approval(value: str) -> Approval:
    if value not in APPROVALS:
        raise InvalidArgument(f"approval must be one of {', '.join(APPROVALS)}; got {value!r}")
    return value


@attrs.define
class Gate:
    """The approval policy of one session, with the answers it has remembered."""

    policy: Approval
    ask: PermissionCallback | None = None
    timeout: float = 300.0
    remembered: dict[str, bool] = attrs.field(factory=dict)
    unconfined: dict[str, bool] = attrs.field(factory=dict)
    """Commands (their exact text) the user answered "always" about running
    without the sandbox: True to run them so at once, False never to ask again."""

    def needs_asking(self, kind: ToolKind) -> bool | None:
        """True to ask, False to allow, None to refuse outright."""
        if kind == "read" or self.policy == "auto":
            return False
        if self.policy == "read-only":
            return False if kind == "external_read" else None
        return not (self.policy == "auto-edit" and kind == "edit")

    def verdict(self, request: PermissionRequest) -> bool | None:
        """:meth:`needs_asking` for this request: a protected edit is a command."""
        return self.needs_asking("command" if request.protected else request.kind)

    async def allows(self, request: PermissionRequest) -> bool:
        verdict = self.verdict(request)
        if verdict is None:
            return False
        if not verdict:
            return True
        remember = request.protected is None
        if remember and request.tool in self.remembered:
            return self.remembered[request.tool]
        if self.ask is None:
            return False
        decision = await self._ask(request)
        if remember and decision == "allow_always":
            self.remembered[request.tool] = True
        elif remember and decision == "reject_always":
            self.remembered[request.tool] = False
        return decision in ("allow_once", "allow_always")

    def runs_unconfined(self, command: str) -> bool:
        """Whether the user said to always run ``command`` without the sandbox."""
        return self.policy != "read-only" and self.unconfined.get(command, False)

    async def allows_unconfined(self, request: PermissionRequest) -> bool:
        """Whether to run the command of ``request`` (``sandbox_denial`` set) again
        without the sandbox: always the user's answer, whatever the policy."""
        command = str(request.arguments.get("command", ""))
        if self.policy == "read-only" or self.ask is None:
            return False
        if command in self.unconfined:
            return self.unconfined[command]
        decision = await self._ask(request)
        if decision == "allow_always":
            self.unconfined[command] = True
        elif decision == "reject_always":
            self.unconfined[command] = False
        return decision in ("allow_once", "allow_always")

    async def _ask(self, request: PermissionRequest) -> Decision:
        assert self.ask is not None
        try:
            return await asyncio.wait_for(self.ask(request), self.timeout)
        except TimeoutError:
            log.warning(
                "permission for %s timed out after %ss: rejected", request.tool, self.timeout
            )
        except Exception:
            log.exception("permission callback failed for %s: rejected", request.tool)
        return "reject_once"
