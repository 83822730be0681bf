"""The copy of a workspace index that a CaptureStarted event names: what a capture
needs to finish in another process (see capture_log)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import orjson

from .capture_diff import Entry

SAVED_VERSION = 1
"""Of the copy :func:`encode` makes."""


@attrs.frozen
class SavedIndex:
    """What :func:`decode` read back."""

    roots: list[Path]
    files: dict[str, Entry]
    folders: dict[str, str]
    racy: set[str]
    """Files to read again whatever their stat (racy, or changed by the engine)."""


def encode(
    roots: Sequence[Path],
    files: Mapping[str, Entry],
    folders: Mapping[str, str],
    racy: set[str],
) -> bytes:
    return orjson.dumps(
        {
            "v": SAVED_VERSION,
            "roots": [str(r) for r in roots],
            "files": {p: [*sig, blob] for p, (sig, blob) in files.items()},
            "folders": folders,
            "racy": sorted(racy),
        }
    )


def decode(data: bytes) -> SavedIndex:
    """The copy :func:`encode` made (ValueError if ``data`` is not one)."""
    try:
        copy = orjson.loads(data)
        if copy.get("v") != SAVED_VERSION:
            raise ValueError(f"a saved index of version {copy.get('v')!r}")
        return SavedIndex(
            [Path(r) for r in copy["roots"]],
            {
                p: ((size, mtime, ino, mode), blob)
                for p, (size, mtime, ino, mode, blob) in copy["files"].items()
            },
            dict(copy["folders"]),
            set(copy["racy"]),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a saved workspace index: {exc}") from exc
