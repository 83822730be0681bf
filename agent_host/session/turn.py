"""One turn: the user's prompt, then model -> tool calls -> results until the model stops.

Each event is appended as it happens, so a crash loses at most the one being
written. Whatever ends the turn -- the model stopping, a cancel, a model error,
the turn limit -- every tool call in the log gets a result and a TurnEnd closes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from . import capture_log
from . import events as ev
from .approval import Gate, PermissionRequest
from .conversation import estimate_tokens
from .errors import (
    AgentHostError,
    CheckpointConflictError,
    FileTooLarge,
    LeaseLost,
    ToolError,
    WriteRefused,
)
from .limits import MAX_FILE_BYTES
from .model import (
    RAW_ARGUMENTS_KEY,
    Finish,
    ModelProvider,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from .pricing import usage_event
from .proposal import propose
from .protected_paths import protected_reason
from .redaction import mask, mask_output
from .session_folder import session_started
from .state import SessionState, finish_even_if_cancelled, tell
from .tools import TOOL_SPECS, ToolContext, ToolKind, ToolOutcome, run_tool, tool_named
from .tools.files import too_large_to_change
from .workspace import CommandResult, DelegatingWorkspace, Workspace, unsaved_bytes

if TYPE_CHECKING:  # imported where they are built (AgentHost): heavy, or walk folders
    from .capture import WorkspaceIndex
    from .mcp import McpServers

log = logging.getLogger(__name__)

CANCELLED = "[cancelled by the user before it finished]"
T = TypeVar("T")


@attrs.define
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0


@attrs.define
class TurnResult:
    session_id: str
    checkpoint: int
    """The seq of this turn's prompt: restore to it to undo the turn."""
    stop_reason: str
    """end_turn, cancelled, max_turns, refusal, max_tokens or error."""
    text: str
    usage: TokenUsage
    cost: float | None
    """USD; None when a model call's cost is unknown (see pricing)."""


@attrs.define
class TurnSettings:
    provider: ModelProvider
    workspace: Workspace
    gate: Gate
    system_prompt: str | None = None
    max_turns: int = 50
    prices: dict[str, Any] | None = None
    compact_at_tokens: int | None = None
    compact: Callable[[], Awaitable[object]] | None = None
    index: WorkspaceIndex | None = None
    """Captures what shell commands change in the workspace (None: not captured)."""
    mcp: McpServers | None = None
    """The MCP servers whose tools the model is offered (None: ours only)."""
    chosen_model: str | None = None
    """A model the caller chose for this turn over the session's: the prompt records it."""
    context: list[dict[str, Any]] | None = None
    """What the user attached to the prompt: the prompt records it."""
    started: ev.SessionStarted | None = None
    """How the log opens when this turn is its first write (None: in the workspace's
    first root, with the turn's model, untitled)."""


async def run_turn(state: SessionState, prompt: str, settings: TurnSettings) -> TurnResult:
    """Run one turn to its end; a cancel ends it with stop_reason "cancelled"."""
    turn = _Turn(state, settings, checkpoint=0)
    try:
        await state.refresh(full=False)  # a session resumed from its snapshot stays so
        opening: list[ev.Event] = []
        if state.head == 0:
            opening.append(
                settings.started
                or session_started(str(settings.workspace.roots[0]), settings.provider.model)
            )
        opening.append(
            ev.UserPrompt(text=prompt, model=settings.chosen_model, context=settings.context)
        )
        # A session made earlier (session/new) was announced then: its opening is untold.
        untold = 1 if settings.started is not None and len(opening) == 2 else 0
        turn.start = state.head
        turn.checkpoint = await state.append(opening, untold=untold)
        stop_reason = await turn.loop()
    except asyncio.CancelledError:
        await turn.close("cancelled")
        return turn.result("cancelled")
    except (CheckpointConflictError, LeaseLost):
        raise  # another writer owns the log now: it is not ours to close
    except BaseException:
        await turn.close("error")
        raise
    try:
        await turn.close(stop_reason)
    except asyncio.CancelledError:
        pass  # the cancel came as the turn ended: its turn_end is logged; report it
    return turn.result(stop_reason)


@attrs.define
class _Turn:
    state: SessionState
    settings: TurnSettings
    checkpoint: int
    start: int | None = None
    """The head before the prompt was appended; None until the append began."""
    texts: list[str] = attrs.field(factory=list)
    streaming: list[str] | None = None
    """Text of the model call in flight, not yet in the log."""
    usage: TokenUsage = attrs.field(factory=TokenUsage)
    compaction_skipped: bool = False
    approved_protected: Path | None = None
    """The protected file the tool call running now was approved to change; any
    other protected file it changes is refused."""
    cost: float | None = 0.0
    """None once a call's cost is unknown: the rest of the sum would mislead."""
    capture_ends: list[ev.Event] = attrs.field(factory=list)
    """A finished capture's records (what the command changed, its CaptureEnded),
    not yet logged: they go first in the turn's next append -- the command's
    result -- so a command costs one durable write after it, not two."""

    async def _append(self, records: list[ev.Event]) -> None:
        """Append ``records`` after any capture records still unlogged: nothing the
        turn logs can come between a capture and its end."""
        ends, self.capture_ends = self.capture_ends, []
        # Taken before the write: an append finishes even when cancelled, so they
        # are logged (or, should it fail, left pending in the log for the next
        # operation on the session to finish, as a crash would).
        await self.state.append([*ends, *records])

    async def loop(self) -> str:
        for _ in range(self.settings.max_turns):
            await self._compact_if_needed()
            calls, finish = await self._call_model()
            if not calls:
                return finish.stop_reason if finish else "end_turn"
            for call in calls:
                await self._run_tool(call)
        return "max_turns"

    async def _compact_if_needed(self) -> None:
        limit, compact = self.settings.compact_at_tokens, self.settings.compact
        if self.compaction_skipped or not (limit and compact):
            return
        if estimate_tokens(await self.state.messages()) > limit:
            done = await compact()
            # One that could not shrink the history will not on the next step either.
            self.compaction_skipped = getattr(done, "compacted", True) is False

    async def _call_model(self) -> tuple[list[ToolCallRequest], Finish | None]:
        messages = await self.state.messages()
        if self.settings.system_prompt:
            messages.insert(0, {"role": "system", "content": self.settings.system_prompt})
        request = ModelRequest(
            messages=messages,
            tools=[*TOOL_SPECS, *await self._external_tools()],
            step=self.state.assistant_messages,
            on_wait=self._report,
        )
        self.streaming = []
        calls: list[ToolCallRequest] = []
        usage: UsageReport | None = None
        finish: Finish | None = None
        async for item in self.settings.provider.stream(request):
            if isinstance(item, TextDelta):
                self.streaming.append(item.text)
                await tell(self.state.listener, self.state.id, item)
            elif isinstance(item, ToolCallRequest):
                calls.append(item)
            elif isinstance(item, UsageReport):
                usage = item
            elif isinstance(item, Finish):
                finish = item
        text = "".join(self.streaming)
        records: list[ev.Event] = [ev.AssistantMessage(text=mask(text))]
        records += [
            ev.ToolCall(call_id=c.call_id, name=c.name, arguments=c.arguments) for c in calls
        ]
        if usage is not None:
            records.append(self._usage(usage))
        # No longer in flight: a cancel landing during this append must not make
        # close() log the same text again.
        self.streaming = None
        self.texts.append(text)
        await self._append(records)
        return calls, finish

    def _usage(self, usage: UsageReport) -> ev.Usage:
        record = usage_event(self.settings.provider.model, usage, self.settings.prices)
        self.usage.input_tokens += usage.input_tokens
        self.usage.output_tokens += usage.output_tokens
        if self.cost is not None:
            self.cost = None if record.cost is None else self.cost + record.cost
        return record

    async def _external_tools(self) -> list[ToolSpec]:
        """The MCP servers' tools, starting those not started yet; a server that
        fails is reported (by name, to the client) and its tools left out."""
        if self.settings.mcp is None:
            return []
        tools = await self.settings.mcp.tools(self._report)
        return [t.spec for t in tools]

    async def _report(self, status: object) -> None:
        """An MCP server's news (failed, restarted), a model call's wait (ModelWait),
        to the client; neither is logged."""
        await tell(self.state.listener, self.state.id, status)

    def _kind(self, name: str) -> ToolKind:
        mcp = self.settings.mcp
        external = mcp.find(name) if mcp is not None else None
        if external is not None:
            return external.kind
        tool = tool_named(name)
        return tool.kind if tool is not None else "command"

    async def _run_tool(self, call: ToolCallRequest) -> None:
        workspace = self.settings.workspace
        request = PermissionRequest(
            session_id=self.state.id,
            tool=call.name,
            arguments=call.arguments,
            kind=self._kind(call.name),
            call_id=call.call_id,
        )
        protected_path = None
        if request.kind == "edit":
            protected_path, request.protected = self._protected(call.arguments.get("path"))
        if request.kind == "edit" and self.settings.gate.verdict(request):
            await propose(request, workspace)  # only for a prompt
        if RAW_ARGUMENTS_KEY in call.arguments:
            outcome = ToolOutcome(
                f"The arguments of your {call.name} call were not valid JSON: "
                f"{str(call.arguments[RAW_ARGUMENTS_KEY])[:200]!r}. Call it again with a "
                "JSON object.",
                is_error=True,
            )
        elif request.kind.startswith("external") and await self.settings.gate.allows(request):
            outcome = await self._run_external(call)
        elif await self.settings.gate.allows(request):
            context = ToolContext(
                workspace=workspace,
                change_file=self._change_file,
                run_command=self._run_command if self.settings.index else None,
                sandbox_exit=SandboxExit(self.settings.gate, request),
            )
            self.approved_protected = protected_path
            try:
                outcome = await run_tool(call.name, call.arguments, context)
            finally:
                self.approved_protected = None
        else:
            outcome = ToolOutcome(
                f"Permission denied: the user did not allow {call.name} "
                f"(approval policy {self.settings.gate.policy!r}). Do not retry it; "
                "ask the user or take another approach.",
                is_error=True,
            )
        # Masked before it is logged, and so before the model or a client sees it.
        output = await mask_output(outcome.output)
        result = ev.ToolResult(
            call_id=call.call_id,
            output=output,
            is_error=outcome.is_error,
            unconfined=outcome.unconfined,
        )
        await self._append([result])

    def _protected(self, path: object) -> tuple[Path | None, str | None]:
        """The file ``path`` resolves to (symlinks followed) and why it is protected;
        (None, None) when it is not."""
        if not isinstance(path, str):
            return None, None
        workspace = self.settings.workspace
        try:
            real = workspace.resolve(path)
        except (AgentHostError, OSError):
            # The tool fails on it too; should it resolve by then, _change_file checks it.
            return None, None
        why = protected_reason(workspace.roots, real)
        return (real, why) if why else (None, None)

    async def _run_command(self, command: str, timeout: float, max_output: int) -> CommandResult:
        """Run a shell command and log what it changed in the workspace."""
        return await self._captured(
            self.settings.workspace.run_command(command, timeout, max_output)
        )

    async def _run_external(self, call: ToolCallRequest) -> ToolOutcome:
        """Call an MCP server's tool. It may change the workspace (a filesystem
        server writes files): that is captured as a command's changes are."""
        assert self.settings.mcp is not None
        work = self.settings.mcp.call(call.name, call.arguments, self._report)
        text, is_error = await (self._captured(work) if self.settings.index else work)
        # Asked after the call: a server restarted for it is the one that ran it.
        confined = self.settings.mcp.confined(call.name)
        return ToolOutcome(text, is_error=is_error, unconfined=not confined)

    async def _captured(self, work: Awaitable[T]) -> T:
        """``work``, with what it changed in the workspace logged.

        The index is brought up to date first, so what the user changed since is
        theirs, not the work's, and logged (write-ahead, see :mod:`.capture_log`)
        before the work starts; after it (whatever became of it: failed, timed
        out, cancelled) its changes become file snapshots of this turn, logged in
        the turn's next append (:attr:`capture_ends`): the tool's result, or the
        close of a cancelled turn. A crash in between is finished by the next
        operation on the session.
        """
        index = self.settings.index
        assert index is not None
        try:
            started = await capture_log.begin(self.state, index)
        except BaseException:
            close = getattr(work, "close", None)
            if close is not None:
                close()  # never started: no "never awaited" warning
            raise

        async def end() -> None:
            # Kept inside the task: a cancel landing meanwhile must not lose them.
            self.capture_ends += await capture_log.end(index, started)

        try:
            return await work
        finally:
            await finish_even_if_cancelled(end())

    async def _change_file(self, path: str, data: bytes | None) -> None:
        """Write-ahead: the old and new content are stored and logged before the write.

        ``before`` is the file on disk; an open editor buffer with unsaved edits is
        kept too (``buffer_before``), so a restore brings back both. Where an editor
        writes (ACP's ``fs/write_text_file``), what landed is read back after --
        whether the write succeeded, failed or was refused -- and, when it is not
        what was logged (the editor normalised it, refused it, left it unsaved), a
        second snapshot of the file records what is there (:meth:`_landed`). A crash
        between the two leaves the first: the restore's normalisation rule
        (:func:`~.workspace.as_normalised`) counts the editor's version as the
        agent's, and a refused write left the file at ``before``, its checkpoint's.
        """
        workspace = self.settings.workspace
        real = workspace.resolve(path)
        relative = workspace.relative(real)
        protected = protected_reason(workspace.roots, real)
        if protected is not None and real != self.approved_protected:
            # The tool's path was not this one when approval was given (a symlink
            # swapped since, or a tool that writes elsewhere): ask again, by refusing.
            raise ToolError(
                f"{relative} is protected ({protected}); it was not what was approved. "
                "Call the tool on it again."
            )
        try:
            before = await workspace.read_disk(path, limit=MAX_FILE_BYTES)
        except FileTooLarge as e:
            raise too_large_to_change(relative, e.size) from None
        unsaved = unsaved_bytes(await workspace.buffer_text(path), before)
        blobs = self.state.store.blobs
        snapshot = ev.FileSnapshot(
            path=relative,
            before=None if before is None else await blobs.put(before),
            after=None if data is None else await blobs.put(data),
            buffer_before=None if unsaved is None else await blobs.put(unsaved),
        )
        await self._append([snapshot])
        try:
            if data is None:
                await workspace.delete(path)
            else:
                await workspace.write_bytes(path, data)
        except WriteRefused:
            await self._landed(path, snapshot)
            raise
        if data is not None and isinstance(workspace, DelegatingWorkspace):
            if workspace.editor_writes:
                await self._landed(path, snapshot)

    async def _landed(self, path: str, logged: ev.FileSnapshot) -> None:
        """Record what an editor's write left, if it is not what ``logged`` says:
        a snapshot from what was logged to what the disk (and the editor's buffer,
        as unsaved text: ``buffer_after``) holds now, so the log's last word on the
        file is what is there."""
        workspace = self.settings.workspace
        try:
            disk = await workspace.read_disk(path, limit=MAX_FILE_BYTES)
            unsaved = unsaved_bytes(await workspace.buffer_text(path), disk)
        except (AgentHostError, OSError) as exc:  # too large now, a folder: left as logged
            log.warning("cannot read back %s after the editor's write: %s", path, exc)
            return
        blobs = self.state.store.blobs
        landed = None if disk is None else await blobs.put(disk)
        unsaved_id = None if unsaved is None else await blobs.put(unsaved)
        if (landed, unsaved_id) == (logged.after, None):
            return
        record = ev.FileSnapshot(
            path=logged.path, before=logged.after, after=landed, buffer_after=unsaved_id
        )
        await self._append([record])

    async def close(self, stop_reason: str) -> None:
        """End the turn in the log: partial text kept, every open call answered."""
        if not self.checkpoint and self.start is not None and self.state.head > self.start:
            # Cancelled while the prompt was being appended: the append finished.
            self.checkpoint = next(
                e.seq for e in self.state.since(self.start) if type(e) is ev.UserPrompt
            )
        if not self.checkpoint:
            return  # stopped before the prompt reached the log: nothing to close
        records: list[ev.Event] = []
        if self.streaming:
            text = "".join(self.streaming)
            records.append(ev.AssistantMessage(text=mask(text)))
            self.texts.append(text)
        self.streaming = None
        answered = {
            e.call_id for e in self.state.since(self.checkpoint) if type(e) is ev.ToolResult
        }
        for event in self.state.since(self.checkpoint):
            if type(event) is ev.ToolCall and event.call_id not in answered:
                records.append(
                    ev.ToolResult(call_id=event.call_id, output=CANCELLED, is_error=True)
                )
        records.append(ev.TurnEnd(stop_reason=stop_reason))
        await self._append(records)

    def result(self, stop_reason: str) -> TurnResult:
        return TurnResult(
            session_id=self.state.id,
            checkpoint=self.checkpoint,
            stop_reason=stop_reason,
            text="\n\n".join(t for t in self.texts if t),
            usage=self.usage,
            cost=self.cost,
        )


@attrs.define
class SandboxExit:
    """The way out of the sandbox for one tool call: the user's answer, through the
    same permission request as any tool's (``sandbox_denial`` set)."""

    gate: Gate
    call: PermissionRequest

    def remembered(self, command: str) -> bool:
        return self.gate.runs_unconfined(command)

    async def ask(self, command: str, denial: str) -> bool:
        request = attrs.evolve(
            self.call, kind="command", arguments={**self.call.arguments}, sandbox_denial=denial
        )
        return await self.gate.allows_unconfined(request)
