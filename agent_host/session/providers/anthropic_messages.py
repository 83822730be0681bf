"""Anthropic's Messages API through the official ``anthropic`` SDK, streamed.

The raw event stream (``messages.create(stream=True)``) is read rather than the
SDK's higher-level helper so that failures surface exactly where they happen:
text deltas pass on as they arrive; ``tool_use`` blocks are assembled from their
``input_json_delta`` pieces and emitted, with usage and the stop reason, once the
message has ended.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import attrs

from ..model import (
    Finish,
    ModelEvent,
    ModelRequest,
    StopReason,
    TextDelta,
    ToolCallRequest,
    UsageReport,
)
from .anthropic_format import to_anthropic, tools_to_anthropic
from .sdk import SdkProvider, interruptible
from .streaming import StallClock, StreamInterrupted, parse_arguments

DEFAULT_MAX_TOKENS = 8192
"""The API requires ``max_tokens``; every current Claude model can produce this many."""

_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


@attrs.define(eq=False)
class AnthropicProvider(SdkProvider):
    """Its client is an ``anthropic.AsyncAnthropic``."""

    async def _attempt(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        clock = StallClock(self.endpoint)
        events = await clock.request(
            self.client.messages.create(**request_kwargs(self.endpoint.model, request))
        )
        state = _Accumulated()
        try:
            # "ping" is the API's keep-alive: it says nothing of the model's progress.
            async for event in interruptible(events, clock, lambda e: e.type != "ping"):
                for out in state.feed(event):
                    yield out
        finally:
            await events.close()
        if not state.stopped:
            raise StreamInterrupted(None)
        for out in state.finish():
            yield out


def request_kwargs(model: str, request: ModelRequest) -> dict[str, Any]:
    system, messages = to_anthropic(request.messages)
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
        "stream": True,
    }
    if system:
        kwargs["system"] = system
    if request.tools:
        kwargs["tools"] = tools_to_anthropic(request.tools)
    return kwargs


@attrs.define
class _ToolUse:
    call_id: str
    name: str
    json: str = ""
    initial: dict[str, Any] = attrs.field(factory=dict)
    """The input in content_block_start: ``{}`` when it streams, whole from some proxies."""


@attrs.define
class _Accumulated:
    tool_uses: dict[int, _ToolUse] = attrs.field(factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    stopped: bool = False

    def feed(self, event: Any) -> list[ModelEvent]:
        kind = event.type
        if kind == "message_start":
            self._count_input(event.message.usage)
            self.output_tokens = getattr(event.message.usage, "output_tokens", 0) or 0
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                initial = block.input if isinstance(block.input, dict) else {}
                self.tool_uses[event.index] = _ToolUse(block.id, block.name, initial=initial)
            elif block.type == "text" and block.text:
                return [TextDelta(block.text)]
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta" and delta.text:
                return [TextDelta(delta.text)]
            if delta.type == "input_json_delta" and event.index in self.tool_uses:
                self.tool_uses[event.index].json += delta.partial_json
            # thinking, signature and citation deltas are not part of the contract
        elif kind == "message_delta":
            if event.delta.stop_reason:
                self.stop_reason = event.delta.stop_reason
            # message_delta's counts are cumulative: they replace, not add
            if event.usage.output_tokens is not None:
                self.output_tokens = event.usage.output_tokens
            if event.usage.input_tokens is not None:
                self._count_input(event.usage)
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _count_input(self, usage: Any) -> None:
        # Cached prompt tokens are reported apart from input_tokens; the prompt was
        # all of them.
        self.input_tokens = sum(
            getattr(usage, field, None) or 0
            for field in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )

    def finish(self) -> list[ModelEvent]:
        events: list[ModelEvent] = [
            ToolCallRequest(
                use.call_id, use.name, parse_arguments(use.json) if use.json else use.initial
            )
            for _, use in sorted(self.tool_uses.items())
        ]
        events.append(UsageReport(self.input_tokens, self.output_tokens))
        stop = _STOP.get(self.stop_reason or "", "end_turn")
        if self.tool_uses and stop == "end_turn":
            stop = "tool_use"
        events.append(Finish(stop))
        return events
