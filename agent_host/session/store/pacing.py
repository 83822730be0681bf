"""When a file store append runs on the event loop instead of a worker thread.

Handing an append to a worker thread and back costs ~50-80 µs here, as much as
half of a fast disk's fdatasync (docs/performance.md, P1). On such a disk the hop
is the bigger cost, so a short append runs right on the event loop. It stays short
only while the disk is fast: every sync is timed, and once they slow (a busy or
network disk, where one can take tens of ms) appends go back to the thread, so
the loop is never held for long. Only an append with nothing to wait for runs
inline: a contended lock, a log another process grew a lot, or a large append
goes to a thread, before anything is written.
"""

from __future__ import annotations

INLINE_BELOW = 0.001
"""Run inline while syncs take less than this (seconds), as a decaying average."""
INLINE_READ_LIMIT = 64 * 1024
"""Bytes another process may have added that an inline append still reads."""
INLINE_WRITE_LIMIT = 256 * 1024
"""Bytes an inline append may write (a large tool output goes to the thread)."""


class WouldBlock(Exception):
    """An inline append met a wait (a held lock, a long read): run it on a thread."""


class SyncPacer:
    """Tracks how long syncs take; says whether the next append may run inline."""

    def __init__(self) -> None:
        self._average: float | None = None

    def inline(self) -> bool:
        average = self._average
        return average is not None and average < INLINE_BELOW

    def observe(self, seconds: float) -> None:
        # A slow sync counts at once in full; fast ones bring the average down slowly,
        # so a disk that stalls now and then keeps its appends on the thread.
        average = self._average
        if average is None or seconds > average:
            self._average = seconds
        else:
            self._average = 0.8 * average + 0.2 * seconds
