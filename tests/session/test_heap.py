"""heap.give_back: what a large read left is freed before the heap is trimmed."""

from __future__ import annotations

import gc
import weakref

from agent_host.session import heap


class _Node:
    other: _Node


def test_give_back_frees_what_a_read_left_in_reference_cycles() -> None:
    """Objects in a cycle are freed only by the cyclic collector, and once old only
    by a full collection: until then their pages (and the arenas around them) can't
    be given back."""
    gc.disable()
    try:
        node = _Node()
        node.other = node
        ref = weakref.ref(node)
        gc.collect(1)  # it survives the younger passes: now in the oldest generation
        del node
        gc.collect(1)
        assert ref() is not None  # unreachable, but only a full collection frees it
        heap.give_back()
        assert ref() is None
    finally:
        gc.enable()
