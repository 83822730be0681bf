"""Short texts a person reads, shared by every front end and the CLI: a line cut to
length, a list of files, a time, what a restore cannot undo."""

from __future__ import annotations

from datetime import datetime

from ..session.changes import count

__all__ = [
    "checkpoint_label",
    "count",
    "describe_files",
    "local_time",
    "outside_changes",
    "shorten",
    "unconfined_runs",
]


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe_files(paths: list[str]) -> str:
    """``"2 files (a.py, b.py)"``; ``"no files"``."""
    if not paths:
        return "no files"
    noun = "file" if len(paths) == 1 else "files"
    return f"{len(paths)} {noun} ({', '.join(sorted(paths))})"


def local_time(ts: float) -> str:
    """A timestamp as local ISO 8601 time with its offset, to the second."""
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


LABEL_PROMPT_CHARS = 60


def checkpoint_label(ordinal: int, prompt: str) -> str:
    """``"3 · add a test"``: a checkpoint as a person names it."""
    return f"{ordinal} · {shorten(prompt, LABEL_PROMPT_CHARS)}"


NAMED_RUNS = 5
"""At most this many commands or tools are named in a note; the rest are counted."""


def unconfined_runs(names: list[str]) -> str:
    """``"`make install`, mcp__fs__write_file"``: what ran outside the sandbox (a
    checkpoint's or a restore's ``unconfined``), each command cut to one short line."""
    shown = [shorten(name, LABEL_PROMPT_CHARS) for name in names[:NAMED_RUNS]]
    text = ", ".join(f"`{name}`" for name in shown)
    more = len(names) - NAMED_RUNS
    return f"{text} and {more} more" if more > 0 else text


def outside_changes(names: list[str], done: bool = True) -> str:
    """A restore's warning that what ran outside the sandbox may have changed
    things outside the workspace that it does not undo; "" when everything ran
    confined (nothing outside can have changed). ``done``: the restore happened
    (else it is previewed)."""
    if not names:
        return ""
    verb = "were not" if done else "would not be"
    return (
        f"Ran without the sandbox: {unconfined_runs(names)}; what they changed outside "
        f"the workspace {verb} undone."
    )
