"""What a parked session is: the few names another process needs to go on with it.

A State is what ``Session.detach()`` and ``Session.stop()`` return and
``agent_resume`` takes. It never holds credentials: no API key, and a password in
a URL is cut out before the URL is kept. The model endpoint (``base_url``,
``api_key``, ``provider=``) and callbacks are given again when resuming.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import attrs

from ..session.approval import APPROVALS
from ..session.errors import InvalidSessionId, StateIncompatible
from ..session.store.base import check_session_id

HARNESS = "agent-host"
FORMAT_VERSION = 1
_TEXT_FIELDS = ("session_id", "store", "workdir", "model", "approval")
# Stores that live in the process that opened them: opened again, they are empty.
IN_PROCESS_STORES = ("memory:", "sqlite:///:memory:")
# Query parameters that carry a credential in the URLs stores and proxies take
# (libpq's password and sslpassword, tokens some services put in the URL).
_SECRET_PARAMS = {"password", "sslpassword", "passwd", "pwd", "token", "api_key", "apikey", "key"}


@attrs.frozen(kw_only=True)
class State:
    harness: str = HARNESS
    version: int = FORMAT_VERSION
    session_id: str
    store: str
    """A store URL (``file:///dir``, ``sqlite:///x.db``, ``memory:``), no password."""
    workdir: str
    """The absolute folder the session works in."""
    model: str
    approval: str

    def dumps(self) -> bytes:
        """JSON, to keep anywhere: a database column, a CI artifact, a queue message."""
        return json.dumps(attrs.asdict(self)).encode()

    @classmethod
    def loads(cls, raw: bytes | str) -> State:
        """The State ``dumps`` wrote; StateIncompatible for anything else."""
        try:
            data = json.loads(raw)
        except (ValueError, TypeError) as exc:
            raise StateIncompatible(
                f"not a session State: the bytes are not JSON ({exc}); "
                "pass exactly what State.dumps() returned"
            ) from None
        if not isinstance(data, dict):
            raise StateIncompatible(
                f"not a session State: expected a JSON object, got {type(data).__name__}; "
                "pass exactly what State.dumps() returned"
            )
        _check_harness(data.get("harness"))
        _check_version(data.get("version"))
        for name in _TEXT_FIELDS:
            if not isinstance(data.get(name), str):
                found = "missing" if name not in data else f"a {type(data[name]).__name__}"
                raise StateIncompatible(
                    f"this State's {name!r} is {found}, not a string: it was damaged or "
                    "not written by State.dumps(); start a new session instead"
                )
        fields = {name: data[name] for name in _TEXT_FIELDS}
        _check_values(fields)
        return cls(**fields)


def _check_harness(harness: object) -> None:
    if harness == HARNESS:
        return
    if isinstance(harness, str):
        raise StateIncompatible(
            f"this State belongs to the {harness!r} harness, not {HARNESS!r}: "
            f"resume it with {harness!r}, or start a new session here"
        )
    raise StateIncompatible(
        f"not an {HARNESS} State: its 'harness' field is missing or not a string; "
        "pass exactly what State.dumps() returned"
    )


def _check_version(version: object) -> None:
    if type(version) is not int:
        raise StateIncompatible(
            f"this State's 'version' is {version!r}, not a format version number: "
            "it was damaged or not written by State.dumps()"
        )
    if version > FORMAT_VERSION:
        raise StateIncompatible(
            f"this State is format version {version}, newer than this agent-host reads "
            f"(up to {FORMAT_VERSION}): upgrade agent-host to resume it"
        )
    if version < 1:
        raise StateIncompatible(f"this State has an unknown format version {version}")


def _check_values(fields: dict[str, str]) -> None:
    try:
        check_session_id(fields["session_id"])
    except InvalidSessionId as exc:
        raise StateIncompatible(f"this State names no valid session: {exc}") from None
    if fields["approval"] not in APPROVALS:
        raise StateIncompatible(
            f"this State's approval {fields['approval']!r} is not one of {', '.join(APPROVALS)}"
        )
    if not os.path.isabs(fields["workdir"]):
        raise StateIncompatible(
            f"this State's workdir {fields['workdir']!r} is not an absolute folder"
        )


def store_url(option: Any, store: object, persistent: bool) -> str | None:
    """How a State names the store a host was given as ``option``; None when it
    cannot (a store object that has no ``url``)."""
    if not persistent:
        return "memory:"
    if option is None:
        from ..session.store import default_store_url

        return default_store_url()
    if isinstance(option, str | os.PathLike):
        text = os.fspath(option)
        if "://" in text or text.startswith("memory:"):
            return without_secrets(text)
        return Path(text).expanduser().absolute().as_uri()  # as open_store reads a path
    # A store object: stores name themselves with a `url` property (not every
    # version of them has one).
    url = getattr(store, "url", None)
    return without_secrets(url) if isinstance(url, str) else None


def without_secrets(url: str) -> str:
    """``url`` without the password of its userinfo or credential query parameters:
    ``postgresql://bob:hunter2@db/s`` -> ``postgresql://bob@db/s``."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at:
        user = userinfo.partition(":")[0]
        netloc = f"{user}@{hostport}" if user else hostport
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k.lower() not in _SECRET_PARAMS]
        if len(kept) != len(pairs):
            query = urlencode(kept)
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # untouched, so "memory:" and odd forms stay byte for byte
    return urlunsplit(parts._replace(netloc=netloc, query=query))
