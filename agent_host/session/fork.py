"""Forking: a new session that starts as another one was, up to a checkpoint.

The fork gets the source's timeline (what restores left of its log) before the
prompt at ``upto`` -- or all of it -- renumbered from its own ``session_started``.
Restores and undos are history of the source, not of the fork: they are left out,
and the file changes a restore made (jumps) are kept as the plain changes they
were, so a restore in the fork puts back what the files held at each of its
checkpoints. Snapshots are shared by blob id; the source is not touched.
"""

from __future__ import annotations

import attrs

from . import events as ev

_LEFT_OUT = (ev.SessionStarted, ev.Restore, ev.RestoreUndone, ev.RestoreApplied)


def forked_events(timeline: list[ev.Event], upto: int | None) -> list[ev.Event]:
    """The events of a fork of ``timeline`` (seqs from 2: the fork's own
    session_started is 1), before the event at ``upto`` or all of them."""
    kept: list[ev.Event] = []
    renumber: dict[int, int] = {}
    # What each restore left as it was: its conflicts, known from its intent (one
    # still being written has no RestoreApplied yet), and the files it found changed.
    left_alone = {e.seq: set(e.conflicts or ()) for e in timeline if type(e) is ev.Restore}
    for e in timeline:
        if type(e) is ev.RestoreApplied:
            left_alone.setdefault(e.intent_seq, set()).update(e.kept)
    intent = 0
    for event in timeline:
        if upto is not None and event.seq >= upto:
            break
        if type(event) is ev.Restore or type(event) is ev.RestoreUndone:
            intent = event.seq
        if isinstance(event, _LEFT_OUT):
            continue
        if type(event) is ev.FileSnapshot and event.jump:
            if event.path in left_alone.get(intent, ()):
                continue  # the restore left the file as it was: no change to carry
            event = attrs.evolve(event, jump=False, buffer_after=None)
        renumber[event.seq] = len(kept) + 2
        kept.append(event)
    out: list[ev.Event] = []
    for event in kept:
        if isinstance(event, ev.Compaction):
            renumbered = _renumbered_compaction(event, renumber)
            if renumbered is None:
                continue
            event = renumbered
        out.append(attrs.evolve(event, seq=0, ts=event.ts))
    return out


def _renumbered_compaction(event: ev.Compaction, renumber: dict[int, int]) -> ev.Compaction | None:
    """The summary over the same events, by their seqs in the fork."""
    covered = [new for old, new in renumber.items() if event.first_seq <= old <= event.last_seq]
    if not covered:
        return None
    return attrs.evolve(event, first_seq=1, last_seq=max(covered))
