"""Compaction: the model summarises the older part of a conversation.

The summary stands for every event before the latest prompt, so the last turn is
kept word for word and no tool call is ever separated from its result (a turn's
calls and results all follow its prompt). Nothing is written until the summary is
complete: a failing model leaves the session exactly as it was.
"""

from __future__ import annotations

import attrs

from . import events as ev
from .conversation import estimate_tokens, summary_text, to_messages
from .model import ModelProvider, ModelRequest, TextDelta, UsageReport
from .pricing import cost as price_of
from .state import SessionState, tell

INSTRUCTIONS = (
    "Summarise the conversation above for your own future use: the user's goals, "
    "decisions made, files created or changed and why, commands run and their "
    "outcomes, and what remains to do. Be specific (paths, names, numbers); omit "
    "pleasantries."
)


@attrs.define
class CompactResult:
    before: int
    """Estimated tokens of the conversation before compaction."""
    after: int
    compacted: bool = True


@attrs.define
class CompactionProgress:
    """Sent to the event sink while a compaction runs."""

    stage: str  # "started", "summarising", "done"
    message: str = ""


async def compact_session(
    state: SessionState, provider: ModelProvider, instructions: str | None
) -> CompactResult:
    events = state.timeline
    messages = to_messages(events)
    before = estimate_tokens(messages)
    prompts = [e.seq for e in events if type(e) is ev.UserPrompt]
    if len(prompts) < 2:
        return CompactResult(before, before, compacted=False)
    last_seq = prompts[-1] - 1
    await tell(
        state.listener, state.id, CompactionProgress("started", f"summarising seqs 1-{last_seq}")
    )
    older = to_messages(e for e in events if e.seq <= last_seq or type(e) is ev.Compaction)
    ask = INSTRUCTIONS + (f"\n\nAlso: {instructions}" if instructions else "")
    request = ModelRequest(
        messages=[*older, {"role": "user", "content": ask}],
        purpose="compaction",
        step=state.assistant_messages,
    )
    parts: list[str] = []
    usage: UsageReport | None = None
    await tell(state.listener, state.id, CompactionProgress("summarising"))
    async for item in provider.stream(request):
        if isinstance(item, TextDelta):
            parts.append(item.text)
        elif isinstance(item, UsageReport):
            usage = item
    summary = "".join(parts).strip()
    compacted = [{"role": "user", "content": summary_text(summary)}]
    compacted += to_messages(e for e in events if e.seq > last_seq)
    after = estimate_tokens(compacted)
    records: list[ev.Event] = [
        ev.Compaction(
            summary=summary,
            first_seq=1,
            last_seq=last_seq,
            tokens_before=before,
            tokens_after=after,
        )
    ]
    if usage is not None:
        records.append(
            ev.Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost=price_of(provider.model, usage.input_tokens, usage.output_tokens),
                model=provider.model,
            )
        )
    await state.append(records)
    await tell(state.listener, state.id, CompactionProgress("done", f"{before} -> {after} tokens"))
    return CompactResult(before, after)
