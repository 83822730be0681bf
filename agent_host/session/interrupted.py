"""A turn its holder never closed: its process died mid-turn, or (PostgreSQL) it lost
its lease and was fenced off before it could close it.

The next turn in the session closes it first, holding the lease, as the turn itself
would have (see turn._Turn.close): every call it left open answered as interrupted,
then a ``turn_end`` with stop reason ``error``. So the log reads as that turn, closed,
then the next, never one turn running into another.
"""

from __future__ import annotations

from . import events as ev
from .conversation import INTERRUPTED
from .state import SessionState

_CLOSED_BY = (ev.TurnEnd, ev.Restore, ev.RestoreUndone, ev.RestoreApplied)
"""Events after which no earlier turn is open: its end, or a restore that moved the
session on (made under the lease, by a holder that owned the log)."""


async def close_interrupted_turn(state: SessionState) -> bool:
    """Close the session's last turn if nothing did; whether there was one. Call it
    holding the session's lease."""
    await state.refresh(full=False)
    prompt = await _open_prompt(state)
    if prompt is None:
        return False
    after = state.since(prompt.seq)
    answered = {e.call_id for e in after if type(e) is ev.ToolResult}
    records: list[ev.Event] = [
        ev.ToolResult(call_id=e.call_id, output=INTERRUPTED, is_error=True)
        for e in after
        if type(e) is ev.ToolCall and e.call_id not in answered
    ]
    records.append(ev.TurnEnd(stop_reason="error"))
    # Not told to this host's client: the calls and the turn were another's.
    await state.append(records, untold=len(records))
    return True


async def _open_prompt(state: SessionState) -> ev.UserPrompt | None:
    """The prompt of a turn still open at the head, if there is one."""
    if not state.loaded:
        # Resumed from a snapshot: the head event alone answers the usual case (a
        # log that ends in a turn_end); anything else looks further back.
        last = await state.store.read(state.id, since_seq=max(state.head - 1, 0))
        if not last or type(last[0]) in _CLOSED_BY:
            return None
        if _is_turn_prompt(last[0]) and last[0].seq == state.head:
            return last[0]  # type: ignore[return-value]
        await state.load()
    for event in reversed(state.events):
        if type(event) in _CLOSED_BY:
            return None
        if _is_turn_prompt(event):
            return event  # type: ignore[return-value]
    return None


def _is_turn_prompt(event: ev.Event) -> bool:
    # A prompt with an item was added by the Agents SDK (add_items): no turn of ours.
    return type(event) is ev.UserPrompt and event.item is None
