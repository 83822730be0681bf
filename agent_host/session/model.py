"""What the engine and a model provider say to each other.

The engine sends a :class:`ModelRequest` (OpenAI chat-format messages and the tool
specs) and reads a stream of :data:`ModelEvent`: text deltas, complete tool calls,
usage, and one :class:`Finish`. Every provider -- OpenAI-compatible, Anthropic,
scripted -- speaks this, so the agent loop knows none of their wire formats.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, Protocol

import attrs

StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal"]

RAW_ARGUMENTS_KEY = "_raw_arguments"
"""A tool call whose arguments were not valid JSON carries them as
``{RAW_ARGUMENTS_KEY: "<the text the model wrote>"}``, so the engine can say so."""


@attrs.define
class ToolSpec:
    """A tool as the model sees it: ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@attrs.define
class ModelRequest:
    messages: list[dict[str, Any]]
    """OpenAI chat format; a system message, if any, comes first."""
    tools: list[ToolSpec] = attrs.field(factory=list)
    step: int = 0
    """How many assistant messages the session's log already holds (scripted
    providers pick their step by it, so replays survive restarts and restores)."""
    purpose: Literal["turn", "compaction"] = "turn"
    max_output_tokens: int | None = None
    on_wait: Callable[[ModelWait], Awaitable[None]] | None = attrs.field(
        default=None, eq=False, repr=False
    )
    """Told while the call waits for its answer and before each retry (the engine
    passes it on to the user; it is not logged)."""


@attrs.frozen
class ModelWait:
    """A model call is still waiting for its answer, or is about to try again."""

    model: str
    """The full name, ``openai/gpt-4.1-mini``."""
    waited: float
    """Seconds the call has waited, retries included (at a retry: the first-byte
    bound the attempt met)."""
    attempt: int
    """This attempt's number, from 1."""
    attempts: int
    """How many there may be: the retries and the first."""
    retry_in: float | None = None
    """Seconds until the next attempt; None while still waiting on this one."""
    message: str = ""
    """What the user reads: ``no answer from openai/gpt-4.1-mini yet (5 s)``."""


@attrs.define
class TextDelta:
    text: str


@attrs.define
class ToolCallRequest:
    """A complete tool call, emitted once its arguments have fully streamed."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@attrs.define
class UsageReport:
    input_tokens: int
    output_tokens: int
    cost: float | None = None
    """USD, when the provider reports what the call cost (a LiteLLM proxy does);
    None: the engine prices the tokens itself."""


@attrs.define
class Finish:
    stop_reason: StopReason


ModelEvent = TextDelta | ToolCallRequest | UsageReport | Finish


class ModelProvider(Protocol):
    model: str
    """The full name, ``provider/model`` (e.g. ``openai/gpt-4.1-mini``)."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one model call. Raises :class:`~agent_host.session.errors.ModelError`
        (after retries) when the call cannot be made or fails."""
        ...

    async def close(self) -> None: ...
