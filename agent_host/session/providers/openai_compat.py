"""Any OpenAI-compatible chat-completions server (OpenAI, a LiteLLM proxy, Ollama)
through the official ``openai`` SDK, streamed.

The request passes the session's messages through unchanged (they already are
OpenAI chat format). Text streams as it arrives; tool calls arrive as fragments
keyed by index (id and name first, arguments in pieces) and are emitted whole
once the stream has finished, followed by usage and the finish reason. A LiteLLM
proxy adds what the call cost (``usage.cost``, USD) to the usage chunk; it is
passed on, so the engine need not price a model its table may lack.
"""

from __future__ import annotations

import math
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
from .sdk import SdkProvider, interruptible
from .streaming import (
    StallClock,
    StreamInterrupted,
    estimate_input_tokens,
    estimate_tokens,
    parse_arguments,
)

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


@attrs.define(eq=False)
class OpenAICompatProvider(SdkProvider):
    """Its client is an ``openai.AsyncOpenAI``."""

    token_limit_param: str = "max_tokens"
    """OpenAI's own reasoning models reject ``max_tokens``; there it is
    ``max_completion_tokens``, which other servers may not know."""

    async def _attempt(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        kwargs = request_kwargs(self.endpoint.model, request, self.token_limit_param)
        # The SDK walks every argument through its TypedDict transform, about 3 ms per
        # 1,000 messages' worth of keys (a second for a long session's conversation);
        # chat messages need none of it, so they go in ``extra_body``, sent as given.
        kwargs["extra_body"] = {"messages": kwargs.pop("messages")}
        clock = StallClock(self.endpoint)
        chunks = await clock.request(self.client.chat.completions.create(messages=[], **kwargs))
        state = _Accumulated()
        try:
            async for chunk in interruptible(chunks, clock, _says_something):
                for event in state.feed(chunk):
                    yield event
        finally:
            await chunks.close()
        if state.finish_reason is None:
            raise StreamInterrupted(None)  # ended without saying why: cut short
        for event in state.finish(request):
            yield event


def _says_something(chunk: Any) -> bool:
    # A chunk with neither choices nor usage is some servers' keep-alive.
    return bool(chunk.choices) or getattr(chunk, "usage", None) is not None


def request_kwargs(model: str, request: ModelRequest, token_limit_param: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": request.messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters or {"type": "object", "properties": {}},
                },
            }
            for tool in request.tools
        ]
    if request.max_output_tokens is not None:
        kwargs[token_limit_param] = request.max_output_tokens
    return kwargs


@attrs.define
class _PartialCall:
    call_id: str = ""
    name: str = ""
    arguments: str = ""


@attrs.define
class _Accumulated:
    """What a stream has said so far, beyond the text already passed on."""

    calls: dict[int, _PartialCall] = attrs.field(factory=dict)
    finish_reason: str | None = None
    usage: tuple[int, int] | None = None
    cost: float | None = None
    text_chars: int = 0
    refused: bool = False

    def feed(self, chunk: Any) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = (usage.prompt_tokens or 0, usage.completion_tokens or 0)
            self.cost = reported_cost(usage)
        for choice in chunk.choices or ():
            if choice.index not in (0, None):
                continue  # n > 1 is never requested; ignore strays
            delta = choice.delta
            if delta is not None:
                events.extend(self._feed_delta(delta))
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return events

    def _feed_delta(self, delta: Any) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        for text, refusal in ((delta.content, False), (getattr(delta, "refusal", None), True)):
            if text:
                self.text_chars += len(text)
                self.refused |= refusal
                events.append(TextDelta(text))
        for fragment in delta.tool_calls or ():
            index = fragment.index
            if index is None:  # some servers send whole calls without an index
                index = len(self.calls)
            call = self.calls.setdefault(index, _PartialCall())
            if fragment.id:
                call.call_id = fragment.id
            function = fragment.function
            if function is not None:
                if function.name and not call.name:
                    # set once: some servers repeat the name in every fragment
                    call.name = function.name
                if function.arguments:
                    call.arguments += function.arguments
        return events

    def finish(self, request: ModelRequest) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        for index in sorted(self.calls):
            call = self.calls[index]
            call_id = call.call_id or f"call_{request.step}_{index}"
            events.append(ToolCallRequest(call_id, call.name, parse_arguments(call.arguments)))
        if self.usage is not None:
            events.append(UsageReport(*self.usage, cost=self.cost))
        else:  # the server ignored include_usage: estimate rather than report nothing
            events.append(
                UsageReport(
                    estimate_input_tokens(request.messages),
                    self.text_chars // 4
                    + sum(estimate_tokens(c.arguments) for c in self.calls.values()),
                )
            )
        events.append(Finish(self._stop_reason()))
        return events

    def _stop_reason(self) -> StopReason:
        reason = _FINISH.get(self.finish_reason or "", "end_turn")
        if self.refused:
            return "refusal"
        # Some servers say "stop" even when they made tool calls; the calls decide,
        # since the engine must run them either way.
        if self.calls and reason == "end_turn":
            return "tool_use"
        return reason


def reported_cost(usage: Any) -> float | None:
    """The USD a server put in ``usage.cost`` (LiteLLM does), if it is a plausible
    amount; anything else is ignored and the engine prices the tokens itself."""
    value = getattr(usage, "cost", None)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
