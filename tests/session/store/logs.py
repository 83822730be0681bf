"""Reading and damaging file-store logs byte by byte, as a crash would."""

from __future__ import annotations

from pathlib import Path


def content(path: Path) -> bytes:
    """A log's lines, without the zeros past them that later appends write over."""
    return path.read_bytes().rstrip(b"\0")


def write_at_content_end(path: Path, at: int, data: bytes) -> None:
    """Put ``data`` at ``at``, zeros after it, keeping the file's size where it can:
    what a writer killed while writing over the zeros leaves."""
    old = path.read_bytes()
    new = old[:at] + data
    path.write_bytes(new + bytes(max(0, len(old) - len(new))))
