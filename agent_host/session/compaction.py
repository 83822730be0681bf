"""Compaction: the model summarises the older part of a conversation.

The summary stands for every event before the latest prompt, so the last turn is
kept word for word and no tool call is ever separated from its result (a turn's
calls and results all follow its prompt). A re-compaction's summary replaces the
previous one (the model is shown it, to carry it forward), so the history holds
one summary however often it is compacted.

Nothing is written until the summary is complete: a failing model leaves the
session exactly as it was. Nor is a compaction written that would not make the
history the model sees smaller -- nothing new to summarise, or a summary no
shorter than what it replaces: then the result says ``compacted=False``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from . import events as ev
from .changes import count, messages_in
from .conversation import estimate_tokens, summary_text, to_messages
from .model import ModelProvider, ModelRequest, TextDelta, UsageReport
from .pricing import usage_event
from .state import SessionState, tell

INSTRUCTIONS = (
    "Summarise the conversation above for your own future use: the user's goals, "
    "decisions made, files created or changed and why, commands run and their "
    "outcomes, and what remains to do. Be specific (paths, names, numbers); omit "
    "pleasantries."
)

SUMMARY_PREFIX = summary_text("").strip()
"""How the history introduces a summary; a model summarising a summary may echo it."""

_CONVERSATION = (ev.UserPrompt, ev.AssistantMessage, ev.ToolCall, ev.ToolResult)


@attrs.define
class CompactResult:
    before: int
    """Estimated tokens of the conversation before compaction."""
    after: int
    """And of the history the model sees afterwards; ``before`` when not compacted."""
    compacted: bool = True


@attrs.define
class CompactionProgress:
    """Sent to the event sink while a compaction runs."""

    stage: str  # "started", "summarising", then "done" or "skipped"
    message: str = ""


async def compact_session(
    state: SessionState,
    provider: ModelProvider,
    instructions: str | None,
    *,
    prices: Mapping[str, Any] | None = None,
) -> CompactResult:
    """Summarise everything before the latest prompt; ``prices`` price the
    summary's model call as a turn's are (see :func:`.pricing.usage_event`)."""
    await state.load()  # the summary covers the whole conversation
    events = state.timeline
    before = estimate_tokens(to_messages(events))
    prompts = [e.seq for e in events if type(e) is ev.UserPrompt]
    last_seq = prompts[-1] - 1 if prompts else 0
    if not _unsummarised(events, last_seq):
        # Asking the model would only re-word the summary there is.
        return CompactResult(before, before, compacted=False)
    older_messages = messages_in(e for e in events if e.seq <= last_seq)
    await tell(
        state.listener,
        state.id,
        CompactionProgress("started", f"summarising {count(older_messages, 'message')}"),
    )
    # The previous summary (a Compaction may follow the latest prompt) comes along.
    older = to_messages(e for e in events if e.seq <= last_seq or type(e) is ev.Compaction)
    ask = INSTRUCTIONS + (f"\n\nAlso: {instructions}" if instructions else "")
    request = ModelRequest(
        messages=[*older, {"role": "user", "content": ask}],
        purpose="compaction",
        step=state.assistant_messages,
        on_wait=lambda wait: tell(state.listener, state.id, wait),
    )
    parts: list[str] = []
    usage: UsageReport | None = None
    await tell(state.listener, state.id, CompactionProgress("summarising"))
    async for item in provider.stream(request):
        if isinstance(item, TextDelta):
            parts.append(item.text)
        elif isinstance(item, UsageReport):
            usage = item
    summary = own_summary("".join(parts))
    compaction = ev.Compaction(
        summary=summary, first_seq=1, last_seq=last_seq, tokens_before=before, tokens_after=0
    )
    # Measured on what the model will see: the fold drops the earlier summaries.
    after = estimate_tokens(to_messages([*events, compaction]))
    if not summary or after >= before:
        why = "the model's summary was empty" if not summary else f"{after} >= {before} tokens"
        await tell(state.listener, state.id, CompactionProgress("skipped", why))
        return CompactResult(before, before, compacted=False)
    records: list[ev.Event] = [attrs.evolve(compaction, tokens_after=after)]
    if usage is not None:
        records.append(usage_event(provider.model, usage, prices))
    await state.append(records)
    done = f"{count(older_messages, 'message')} summarised: about {before} → {after} tokens"
    await tell(state.listener, state.id, CompactionProgress("done", done))
    return CompactResult(before, after)


def own_summary(text: str) -> str:
    """The summary without the history's heading, which the model may have echoed
    (once per compaction it saw), so the history never shows it twice."""
    summary = text.strip()
    while summary.startswith(SUMMARY_PREFIX):
        summary = summary[len(SUMMARY_PREFIX) :].strip()
    return summary


def _unsummarised(events: list[ev.Event], last_seq: int) -> bool:
    """Whether the conversation before ``last_seq`` has anything no summary covers."""
    covered = max((e.last_seq for e in events if type(e) is ev.Compaction), default=0)
    return any(isinstance(e, _CONVERSATION) and covered < e.seq <= last_seq for e in events)
