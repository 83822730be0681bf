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
    turn = await _open_turn(state)
    if turn is None:
        return False
    answered = {e.call_id for e in turn if type(e) is ev.ToolResult}
    records: list[ev.Event] = [
        ev.ToolResult(call_id=e.call_id, output=INTERRUPTED, is_error=True)
        for e in turn
        if type(e) is ev.ToolCall and e.call_id not in answered
    ]
    records.append(ev.TurnEnd(stop_reason="error"))
    # Not told to this host's client: the calls and the turn were another's.
    await state.append(records, untold=len(records))
    return True


async def _open_turn(state: SessionState) -> list[ev.Event] | None:
    """The events of a turn still open at the head, from its prompt on; None if none is."""
    if state.loaded:
        return _scan(state.events)[1]
    # Resumed from a snapshot: the last few events answer the usual case (a log that
    # ends in a turn_end); windows four times larger each time until one decides.
    # The state is left as it is, not loaded.
    size = 8
    while True:
        since = max(state.head - size, 0)
        decided, turn = _scan(await state.store.read(state.id, since_seq=since))
        if decided or since == 0:
            return turn
        size *= 4


def _scan(events: list[ev.Event]) -> tuple[bool, list[ev.Event] | None]:
    """Whether ``events`` (the end of a log) decide, and the open turn's events."""
    for n in range(len(events) - 1, -1, -1):
        event = events[n]
        if type(event) in _CLOSED_BY:
            return True, None
        # A prompt with an item was added by the Agents SDK (add_items): no turn of ours.
        if type(event) is ev.UserPrompt and event.item is None:
            return True, events[n:]
    return False, None
