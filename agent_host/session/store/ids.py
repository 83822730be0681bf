"""What a session id is, and the file name a store derives from one.

The one rule, for every API, the CLI and both wires: a session id is any string of
1 to :data:`MAX_ID_CHARS` characters and at most :data:`MAX_ID_BYTES` bytes in
UTF-8, with no NUL and no unpaired surrogate. That admits what apps key sessions
by (emails, URLs, dotted and Unicode ids) and keeps them exact: no case folding,
no Unicode normalisation, no trimming. NUL is refused because PostgreSQL text and
C strings cannot hold it; an unpaired surrogate because it has no UTF-8 form, so
no log, index or wire could carry it.

A file name is derived from an id, never taken from it: :func:`file_stem`.
"""

from __future__ import annotations

import functools
import hashlib
import re

from ..errors import InvalidSessionId

__all__ = ["MAX_ID_BYTES", "MAX_ID_CHARS", "check_session_id", "file_stem", "is_plain"]

MAX_ID_CHARS = 512
MAX_ID_BYTES = 1024
RULE = (
    f"a session id is 1-{MAX_ID_CHARS} characters, at most {MAX_ID_BYTES} bytes "
    "in UTF-8, with no NUL and no unpaired surrogate"
)

# The ids every release has accepted: their file names are the ids themselves, so
# stores written before any other id was allowed read unchanged.
_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,128}")
_SLUG_OUT = re.compile(r"[^a-z0-9_-]+")
SLUG_CHARS = 40
"""How much of a derived name is a readable hint of the id (the hash decides)."""


def check_session_id(session_id: object) -> str:
    """``session_id`` unchanged if it is a session id (see the module's doc);
    else :class:`InvalidSessionId` (a ValueError) saying the rule."""
    problem = _problem(session_id)
    if problem is None:
        return session_id  # type: ignore[return-value]  # _problem checked it is a str
    shown = repr(session_id)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    raise InvalidSessionId(f"invalid session id {shown} ({problem}): {RULE}")


def _problem(session_id: object) -> str | None:
    if not isinstance(session_id, str):
        return f"a {type(session_id).__name__}, not a string"
    if _PLAIN.fullmatch(session_id):
        return None  # the common case, checked without encoding
    if not session_id:
        return "empty"
    if len(session_id) > MAX_ID_CHARS:
        return f"{len(session_id)} characters"
    if "\0" in session_id:
        return "contains NUL"
    try:
        size = len(session_id.encode("utf-8"))
    except UnicodeEncodeError:
        return "contains an unpaired surrogate"
    if size > MAX_ID_BYTES:
        return f"{size} bytes in UTF-8"
    return None


def is_plain(session_id: str) -> bool:
    """Whether ``session_id`` is its own file name (letters, digits, '-', '_', <= 128)."""
    return _PLAIN.fullmatch(session_id) is not None


@functools.lru_cache(maxsize=4096)
def file_stem(session_id: str) -> str:
    """The name (before a suffix) a store gives this session's files.

    A plain id is its own name, as it always was. Any other id gets
    ``~<slug>~<hash>``: ``~`` never starts a plain id, so the two kinds cannot
    meet; the hash (128 bits of SHA-256 over the exact UTF-8) tells ids apart,
    so ``.``, ``..``, ``/``, case pairs on a case-insensitive file system and
    forms Unicode normalisation would merge all get names of their own; all
    lowercase ASCII, at most 74 characters, far under NAME_MAX with any suffix.
    The slug (the id lowercased, other characters as ``_``) is only for a human
    reading the folder. The exact id is kept beside the files (the file store's
    ``sessions/<stem>.id``) and in the data itself.
    """
    if _PLAIN.fullmatch(session_id):
        return session_id
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
    slug = _SLUG_OUT.sub("_", session_id.lower())[:SLUG_CHARS]
    return f"~{slug}~{digest}"
