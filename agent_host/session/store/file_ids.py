"""The file store's record of a derived-name session's exact id.

A session whose id is not its own file name (ids.file_stem) keeps the id, as
UTF-8, in ``sessions/<stem>.id``, written before its log is made and removed after
the log is. The index carries the id too; this file is what a rebuilt index (the
index lost or damaged) reads it back from.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..durable import write_atomically
from ..errors import store_unavailable
from .ids import file_stem, is_plain

log = logging.getLogger(__name__)


def path(sessions_dir: str, session_id: str) -> str:
    return f"{sessions_dir}/{file_stem(session_id)}.id"


def keep(sessions_dir: str, session_id: str) -> None:
    """Write the id beside the log-to-be, unless it is there (the caller holds
    the session's lock)."""
    if is_plain(session_id):
        return
    where = path(sessions_dir, session_id)
    if os.path.exists(where):
        return
    try:
        write_atomically(Path(where), session_id.encode("utf-8"), mode=0o600)
    except OSError as exc:
        raise store_unavailable(exc.filename or where, "create", exc) from exc


def forget(sessions_dir: str, session_id: str) -> None:
    if not is_plain(session_id):
        Path(path(sessions_dir, session_id)).unlink(missing_ok=True)


def id_of(sessions_dir: str, stem: str) -> str | None:
    """The session id a log named ``<stem>.jsonl`` stands for: the name itself,
    or the id kept beside it (None, logged, if that is lost or names another)."""
    if is_plain(stem):
        return stem
    where = f"{sessions_dir}/{stem}.id"
    try:
        session_id = Path(where).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("the index leaves out %s.jsonl: its id cannot be read: %s", stem, exc)
        return None
    if file_stem(session_id) != stem:
        log.warning("the index leaves out %s.jsonl: %s names another session", stem, where)
        return None
    return session_id
