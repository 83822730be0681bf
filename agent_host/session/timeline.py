"""A session's timeline: its log as restores and their undos left it.

A restore never cuts the log. It appends one ``Restore`` event (with the file
changes it makes), and that one append is the whole decision: a crash leaves it
recorded or not, never half. The conversation it takes back is hidden from the
timeline instead of removed, so its undo -- again one append, a ``RestoreUndone``
-- only has to show it again, and nothing acknowledged is ever lost.

Folding, event by event:

- a ``Restore`` to ``to_seq`` that takes back the conversation hides every
  visible event after ``to_seq``; when it leaves the files as they are, the
  hidden turns' file snapshots stay visible (after the restore, as it is then
  that they belong to no prompt), since their edits are still on disk and a
  later restore to an earlier point must revert them;
- a ``RestoreUndone`` brings back the timeline as it was just before its restore;
- every other event is appended.

A ``Restore`` written by agent-host 0.1 (``truncation`` set) did cut the log, so
it hides nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import events as ev


class Timeline:
    """The visible events of a log, folded incrementally as events are appended."""

    __slots__ = ("events", "_before")

    def __init__(self, events: Iterable[ev.Event] = ()) -> None:
        self.events: list[ev.Event] = []
        self._before: tuple[int, list[ev.Event]] | None = None
        """The last restore's seq and the timeline just before it, for its undo.
        Only the last restore can be undone (checkpoints.last_restore), so one
        is kept, not one per restore of a long session."""
        self.extend(events)

    def extend(self, events: Iterable[ev.Event]) -> None:
        visible = self.events
        for event in events:
            match event:
                case ev.Restore():
                    visible = self._restore(visible, event)
                case ev.RestoreUndone():
                    if self._before is not None and self._before[0] == event.restore_seq:
                        visible = self._before[1]
                        self._before = None
                    visible.append(event)
                case _:
                    visible.append(event)
        self.events = visible

    def _restore(self, visible: list[ev.Event], restore: ev.Restore) -> list[ev.Event]:
        self._before = (restore.seq, visible)
        if not restore.conversation or restore.truncation is not None:
            return [*visible, restore]
        cut = restore.to_seq
        kept = [e for e in visible if e.seq <= cut]
        kept.append(restore)
        if not restore.files:
            kept += [e for e in visible if e.seq > cut and type(e) is ev.FileSnapshot]
        return kept


def timeline(events: Iterable[ev.Event]) -> list[ev.Event]:
    """The visible events of ``events`` (a whole log, in order)."""
    return Timeline(events).events
