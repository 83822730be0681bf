"""The bounds on what a client may send, shared by both front ends (LSP and ACP).

Each is documented in docs/security.md and the protocol docs; a message or a
param over one is refused at once with an error naming the bound.
"""

from __future__ import annotations

LARGEST_MESSAGE = 256 << 20
"""Bytes of one message: an LSP frame's body, an ACP line. Larger is skipped
unread (-32600, id null). Large enough for a big editor buffer or file read."""

MAX_LIST_ITEMS = 10_000
"""Items of any one array in a request's params: more is -32602 naming the
array, before any item is looked at."""

REPORTED_PROBLEMS = 5
"""Invalid params: the first problems named; the rest are counted."""

LONGEST_ERROR_MESSAGE = 1_000
"""Characters of an error message about params; a longer one is cut."""


def clip(text: str, limit: int = LONGEST_ERROR_MESSAGE) -> str:
    """``text``, at most ``limit`` characters; a cut one says so."""
    if len(text) <= limit:
        return text
    tail = f"... ({len(text)} characters)"
    return text[: max(0, limit - len(tail))] + tail
