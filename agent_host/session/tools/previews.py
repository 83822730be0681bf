"""What an editing tool would leave in its file, before it runs: the text a
permission prompt shows beside the current one. Each takes the call's arguments
and the file's current text (None: the file does not exist) and returns the
proposed text, or None when the arguments do not say (the tool then fails on
them itself)."""

from __future__ import annotations

from typing import Any


def written(args: dict[str, Any], current: str | None) -> str | None:
    content = args.get("content")
    return content if isinstance(content, str) else None


def edited(args: dict[str, Any], current: str | None) -> str | None:
    old = args.get("old_string")
    if not isinstance(old, str):
        return None
    new = args.get("new_string")
    count = -1 if args.get("replace_all") else 1
    return (current or "").replace(old, "" if new is None else str(new), count)


def deleted(args: dict[str, Any], current: str | None) -> str | None:
    return ""
