"""Short texts a person reads, shared by every front end and the CLI: a line cut to
length, a list of files, a time."""

from __future__ import annotations

from datetime import datetime


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


def count(n: int, noun: str) -> str:
    """``"1 message"``, ``"4 messages"``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
