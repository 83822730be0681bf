"""A deterministic model that plays back a JSON script: for CI, demos and tests.

The script is ``{"steps": [step, ...]}``; a step is::

    {"text": "...", "tool_calls": [{"name": "write_file", "arguments": {...}}],
     "usage": {"input_tokens": 10, "output_tokens": 5}, "delay_ms": 0,
     "stop_reason": "end_turn"}

every key optional. Text streams in pieces of about three words; ``delay_ms`` is
waited before each piece and each tool call.

A turn plays step ``request.step`` -- the number of assistant messages already in
the session's log -- so a replay after a restart, a restore or a rewind picks the
same step as the first run did. Compaction calls consume no step: they summarise
the conversation they were given.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, get_args

import attrs

from ..conversation import summary_text
from ..model import (
    Finish,
    ModelEvent,
    ModelRequest,
    StopReason,
    TextDelta,
    ToolCallRequest,
    UsageReport,
)
from .errors import ModelConfigError, ScriptExhausted
from .streaming import estimate_input_tokens, estimate_tokens

WORDS_PER_DELTA = 3
SUMMARY_LIMIT = 1000
_STOP_REASONS: tuple[str, ...] = get_args(StopReason)
_STEP_KEYS = {"text", "tool_calls", "usage", "delay_ms", "stop_reason"}


@attrs.frozen
class ScriptedCall:
    name: str
    arguments: dict[str, Any]


@attrs.frozen
class ScriptedStep:
    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    usage: tuple[int, int] | None = None
    delay_ms: float = 0
    stop_reason: StopReason | None = None


@attrs.define(eq=False)
class ScriptedProvider:
    model: str
    """``scripted:<path>``, as given."""
    path: Path
    steps: list[ScriptedStep]

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "compaction":
            return _compaction(request)
        return self._turn(request)

    async def _turn(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        # Raised from the iteration, like the network providers' failures, so callers
        # handle every provider's errors in one place.
        if not 0 <= request.step < len(self.steps):
            raise ScriptExhausted(
                f"scripted model {self.path} has {len(self.steps)} steps; the session asked "
                f"for step {request.step} (the script is exhausted)"
            )
        async for event in _play(self.steps[request.step], request):
            yield event

    async def close(self) -> None:
        return None


def open_scripted(model: str, path_text: str) -> ScriptedProvider:
    if not path_text:
        raise ModelConfigError("scripted model needs a script path: 'scripted:<PATH>'")
    path = Path(path_text).expanduser()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ModelConfigError(f"scripted model script {path} does not exist") from None
    except OSError as exc:
        raise ModelConfigError(f"cannot read scripted model script {path}: {exc}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ModelConfigError(f"scripted model script {path} is not valid JSON: {exc}") from None
    return ScriptedProvider(model, path, parse_script(data, path))


def parse_script(data: Any, path: Path) -> list[ScriptedStep]:
    where = f"scripted model script {path}"
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ModelConfigError(f'{where} must be an object with a "steps" list')
    return [_parse_step(step, f"{where}: steps[{i}]") for i, step in enumerate(data["steps"])]


def _parse_step(step: Any, where: str) -> ScriptedStep:
    if not isinstance(step, dict):
        raise ModelConfigError(f"{where} must be an object")
    unknown = set(step) - _STEP_KEYS
    if unknown:
        # a typo ("tool_call") would otherwise silently play an empty step
        raise ModelConfigError(
            f"{where} has unknown keys {sorted(unknown)}; known: {sorted(_STEP_KEYS)}"
        )
    text = step.get("text", "")
    if not isinstance(text, str):
        raise ModelConfigError(f"{where}.text must be a string")
    delay = step.get("delay_ms", 0)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise ModelConfigError(f"{where}.delay_ms must be a number >= 0")
    stop = step.get("stop_reason")
    if stop is not None and stop not in _STOP_REASONS:
        raise ModelConfigError(f"{where}.stop_reason must be one of {list(_STOP_REASONS)}")
    calls = step.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ModelConfigError(f"{where}.tool_calls must be a list")
    return ScriptedStep(
        text=text,
        tool_calls=tuple(_parse_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)),
        usage=_parse_usage(step.get("usage"), f"{where}.usage"),
        delay_ms=delay,
        stop_reason=stop,
    )


def _parse_call(call: Any, where: str) -> ScriptedCall:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
        raise ModelConfigError(f'{where} must be an object with a "name" string')
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):  # allow the JSON text a real model would send
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    if not isinstance(arguments, dict):
        raise ModelConfigError(f"{where}.arguments must be an object")
    return ScriptedCall(call["name"], arguments)


def _parse_usage(usage: Any, where: str) -> tuple[int, int] | None:
    if usage is None:
        return None
    counts = (
        (usage.get("input_tokens"), usage.get("output_tokens")) if isinstance(usage, dict) else ()
    )
    match counts:
        case (int(), int()) if all(type(c) is int and c >= 0 for c in counts):
            return counts[0], counts[1]  # type() is int: a bool is an int too, and no count
    raise ModelConfigError(f"{where} must be {{'input_tokens': int, 'output_tokens': int}}")


def text_chunks(text: str) -> list[str]:
    """``text`` in pieces of about WORDS_PER_DELTA words, whitespace kept, so the
    pieces join back to exactly ``text``."""
    words = re.findall(r"\s*\S+\s*", text)
    if not words:
        return [text] if text else []
    return ["".join(words[i : i + WORDS_PER_DELTA]) for i in range(0, len(words), WORDS_PER_DELTA)]


async def _play(step: ScriptedStep, request: ModelRequest) -> AsyncIterator[ModelEvent]:
    # Every chunk and call waits delay_ms first, the first one too: that is the
    # latency a real model shows before its first token, and what lets a test
    # cancel a turn before any output.
    delay = step.delay_ms / 1000
    for chunk in text_chunks(step.text):
        if delay:
            await asyncio.sleep(delay)
        yield TextDelta(chunk)
    for index, call in enumerate(step.tool_calls):
        if delay:
            await asyncio.sleep(delay)
        # copied, so a consumer that mutates the arguments can't change the script
        arguments = copy.deepcopy(call.arguments)  # strings are shared, not encoded
        yield ToolCallRequest(f"call_{request.step}_{index}", call.name, arguments)
    if step.usage is not None:
        yield UsageReport(*step.usage)
    else:
        yield UsageReport(estimate_input_tokens(request.messages), estimate_tokens(step.text))
    if step.tool_calls:
        yield Finish("tool_use")
    else:
        yield Finish(step.stop_reason or "end_turn")


def compaction_summary(messages: list[dict[str, Any]]) -> str:
    """What a scripted model 'summarises': an earlier summary, the user prompts and
    the last answer, within SUMMARY_LIMIT characters. The answer's and the earlier
    summary's shares are set aside first, so a long prompt cannot push them out."""
    earlier = [_earlier_summary(m) for m in messages]
    summaries = [s for s in earlier if s is not None]
    prompts = [
        _squash(m.get("content"), 200)
        for m, s in zip(messages, earlier, strict=True)
        if m.get("role") == "user" and s is None
    ]
    answers = [_squash(m.get("content"), 300) for m in messages if m.get("role") == "assistant"]
    answer = next((f" last answer: {a}" for a in reversed(answers) if a), "")
    head = f"Summary of {len(messages)} messages:"
    if summaries:
        # carried forward without the history's heading, as a real model would
        head += f" earlier: {_squash(summaries[-1], 400)}"
    asked = "".join(f" user asked: {p}" for p in prompts if p)
    room = SUMMARY_LIMIT - len(head) - len(answer)
    if len(asked) > room:
        asked = asked[: room - 3] + "..."
    return head + asked + answer


def _earlier_summary(message: dict[str, Any]) -> str | None:
    """The text of a compaction's summary as the history shows it, else None."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, str):
        return None
    heading = summary_text("")
    return content.removeprefix(heading) if content.startswith(heading) else None


def _squash(content: Any, limit: int) -> str:
    text = " ".join(content.split()) if isinstance(content, str) else ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


async def _compaction(request: ModelRequest) -> AsyncIterator[ModelEvent]:
    messages = request.messages
    if messages and messages[-1].get("role") == "user":
        messages = messages[:-1]  # the compaction instruction, not the conversation
    summary = compaction_summary(messages)
    for chunk in text_chunks(summary):
        yield TextDelta(chunk)
    yield UsageReport(estimate_input_tokens(request.messages), estimate_tokens(summary))
    yield Finish("end_turn")
