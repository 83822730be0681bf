"""The summary of a session that list() shows, folded from its log."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import attrs

from ..events import Event, Restore, RestoreUndone, SessionStarted, UserPrompt
from .info import SessionInfo

TITLE_LENGTH = 80


@attrs.define(slots=True)
class Summary:
    """What a store's session index keeps, folded from the log.

    ``turns`` counts the prompts of the session's timeline: a restore that takes
    the conversation back hides the prompts after its point and its undo shows
    them again (see session.timeline), so the fold keeps the seqs of the visible
    prompts. A summary loaded from an index row has no such list
    (``prompts=None``); its owner folds the log again before adding a restore.
    """

    created_at: float = 0.0
    updated_at: float = 0.0
    title: str = ""
    turns: int = 0
    head: int = 0
    workspace: str = ""
    prompts: array | None = attrs.field(factory=lambda: array("q"))
    _before: tuple[int, array] | None = None
    """The last restore's seq and the prompts visible before it, for its undo."""

    def add(self, event: Event) -> None:
        """Fold one stored event into the summary."""
        self.add_as(event, event.seq, event.ts)

    def add_new(self, events: Iterable[Event], first_seq: int, ts: float) -> None:
        """Fold events just appended, numbered from ``first_seq``, all stamped ``ts``."""
        for seq, event in enumerate(events, first_seq):
            self.add_as(event, seq, ts)

    def add_as(self, event: Event, seq: int, ts: float) -> None:
        if self.head == 0:
            self.created_at = ts
        self.head = seq
        self.updated_at = ts
        match event:
            case UserPrompt():
                self.turns += 1
                if self.prompts is not None:
                    self.prompts.append(seq)
                if not self.title:
                    self.title = make_title(event.text)
            case Restore() | RestoreUndone():
                self._restore(event, seq)
            case SessionStarted():
                if event.title:
                    self.title = make_title(event.title)
                if event.workspace:
                    self.workspace = event.workspace

    def _restore(self, event: Restore | RestoreUndone, seq: int) -> None:
        if self.prompts is None:
            return  # unknown: the owner folds the whole log instead
        if isinstance(event, RestoreUndone):
            if self._before is not None and self._before[0] == event.restore_seq:
                self.prompts = self._before[1]
                self._before = None
        else:
            self._before = (seq, self.prompts)
            if event.conversation and event.truncation is None:
                self.prompts = array("q", (p for p in self.prompts if p <= event.to_seq))
            else:
                self.prompts = array("q", self.prompts)
        self.turns = len(self.prompts)

    def extend(self, events: Sequence[Event]) -> None:
        """Fold stored events in, as :meth:`add` each would, in a few passes (a resume
        folds every event of the log)."""
        if not events:
            return
        starts = [e for e in events if type(e) is SessionStarted]
        restores = any(type(e) is Restore or type(e) is RestoreUndone for e in events)
        if restores or len(starts) > 1 or (starts and starts[0] is not events[0]):
            for event in events:  # a start after other events: fold them in order
                self.add(event)
            return
        if starts:
            self.add(starts[0])  # the log's first event: before every prompt
        if self.head == 0:
            self.created_at = events[0].ts
        last = events[-1]
        self.head, self.updated_at = last.seq, last.ts
        prompts = [e for e in events if type(e) is UserPrompt]
        self.turns += len(prompts)
        if self.prompts is not None:
            self.prompts.extend(p.seq for p in prompts)
        for prompt in prompts if not self.title else ():
            self.title = make_title(prompt.text)  # a blank prompt leaves it unset
            if self.title:
                break

    def info(self, session_id: str) -> SessionInfo:
        return SessionInfo(
            session_id,
            self.created_at,
            self.updated_at,
            self.head,
            self.turns,
            self.title,
            self.workspace,
        )


def summarize(events: Iterable[Event]) -> Summary:
    summary = Summary()
    summary.extend(list(events))
    return summary


def make_title(text: str) -> str:
    """A prompt as a one-line title: whitespace collapsed, cut at a word near 80 chars."""
    line = " ".join(text.split())
    if len(line) <= TITLE_LENGTH:
        return line
    cut = line[: TITLE_LENGTH - 1]
    space = cut.rfind(" ")
    if space > TITLE_LENGTH // 2:
        cut = cut[:space]
    return cut + "…"
