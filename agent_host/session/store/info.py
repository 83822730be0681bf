"""What a store gives back: a session's row in list(), a truncation kept for undo."""

from __future__ import annotations

import attrs

from ..events import Event


@attrs.define(slots=True)
class SessionInfo:
    """One row of :meth:`Checkpointer.list`. Times are UNIX seconds."""

    id: str
    created_at: float
    updated_at: float
    head: int
    turns: int
    title: str
    workspace: str = ""
    """The folder the session was started in (its SessionStarted), "" if unknown."""

    @property
    def empty(self) -> bool:
        """Nothing in its log but its opening: no prompt, no item. Listings hide it
        (older versions stored every session/new so)."""
        return self.turns == 0 and self.head <= 1


@attrs.define(slots=True)
class Truncation:
    """Events removed by :meth:`Checkpointer.truncate`, kept so the cut can be undone.

    ``id`` counts truncations of one session from 1; ``seq`` is the head the log
    was cut back to; ``events`` are what was removed, with their original seqs.
    """

    id: int
    seq: int
    ts: float
    events: list[Event]
