"""Redaction by value: every secret the process knows, masked wherever text leaves it.

The environment policy keeps secrets out of commands by *name*; this keeps their
*values* out of what the agent says and stores, because a command can still find a
key (``cat ~/.config/x``, ``/proc/$PPID/environ``) and a server can echo one in an
error. :data:`SECRETS` is the process's one registry. Who learns a secret registers
it: the providers (API keys, URL passwords), the MCP configs (env values, headers,
URL passwords), the store URL, and the environment policy (the values of the
variables it drops). Whoever emits text masks it: tool results before they are
logged or sent to the model, model error messages before they are cut, log records
(:class:`RedactingFilter`), ``--json`` output, and each front end's outgoing
results, errors and notifications.

Each secret is matched whole and in the forms it takes when it is echoed back
changed: any case, with whitespace between its characters, reversed, with any
character percent-encoded, in hex (``xxd -p``, ``od -tx1``: either case, wrapped
or spaced between bytes), in base64 (of the secret alone, at any alignment inside
a longer base64 text, and of ``user:password`` for URL credentials), and, for
secrets of 12 characters or more, any prefix or suffix of 8 or more, as text or
hex (what a cut leaves, ``sk-test…``). Values under 6 characters are not registered: masking
``1`` or ``true`` everywhere would protect nothing and wreck every output.

All forms are one alternation compiled with RE2 (linear time, no backtracking on
megabytes of output), or Python ``re`` where RE2 is missing.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "[redacted]"
IN_THREAD_FROM = 64 << 10
"""Texts this long are masked in a thread: a megabyte takes 5-25 ms of matching."""
_RECENT = 4
_RECENT_MAX_CHARS = 16 << 20
"""At most 4 long texts kept, none over 16 M characters: the cache holds them alive."""
MIN_LENGTH = 6
"""Shorter values are not registered."""
FRAGMENT_FROM = 12
"""Secrets this long or longer are masked in their prefixes and suffixes too ..."""
FRAGMENT_MIN = 8
"""... of at least this many characters."""

_GAP = r"\s*"


def _atom(char: str) -> str:
    """``char``, or its percent-encoding (case is ignored by the whole pattern)."""
    encoded = "".join(f"%{b:02X}" for b in char.encode())
    plus = "|\\+" if char == " " else ""
    return f"(?:{re.escape(char)}|{encoded}{plus})"


def _hex_atom(char: str) -> str:
    """``char``'s UTF-8 bytes in hex (either case: the pattern ignores case), with
    room between bytes for a dump's spaces and line breaks (``xxd -p`` wraps every
    30 bytes, ``od -An -tx1`` puts a space between each and wraps every 16)."""
    return _GAP.join(f"{b:02x}" for b in char.encode())


def _spaced(text: str, atom: Callable[[str], str] = _atom) -> str:
    return _GAP.join(atom(c) for c in text)


def _prefixes(secret: str, atom: Callable[[str], str] = _atom) -> str:
    """The secret, or any prefix of it of at least FRAGMENT_MIN characters: the
    first FRAGMENT_MIN characters, then each further one optional, nested, so the
    longest present prefix is what is masked."""
    head = _spaced(secret[:FRAGMENT_MIN], atom)
    tail = ""
    for char in reversed(secret[FRAGMENT_MIN:]):
        tail = f"(?:{_GAP}{atom(char)}{tail})?"
    return head + tail


def _base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that depend only on ``raw`` when it sits at each of
    the three byte alignments inside a longer base64 text (standard and URL-safe)."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode().rstrip("=")
        start = -(-8 * offset // 6)
        end = 8 * (offset + len(raw)) // 6
        core = encoded[start:end]
        if len(core) >= FRAGMENT_MIN:
            cores.append(core)
            urlsafe = core.replace("+", "-").replace("/", "_")
            if urlsafe != core:
                cores.append(urlsafe)
    return cores


def _forms(secret: str, fragments: bool) -> list[str]:
    forms = []
    for atom in (_atom, _hex_atom):
        if fragments and len(secret) >= FRAGMENT_FROM:
            forms.append(_prefixes(secret, atom))
            last = len(secret) - FRAGMENT_MIN + 1
            forms += [_spaced(secret[i:], atom) for i in range(1, last)]
        else:
            forms.append(_spaced(secret, atom))
    forms.append(_spaced(secret[::-1]))
    forms += [_GAP.join(re.escape(c) for c in core) for core in _base64_cores(secret.encode())]
    return forms


def looks_like_token(value: str) -> bool:
    """A value worth masking in fragments: no spaces or path, letters and digits.

    Fragments of an ordinary value (``/run/user/1000/keyring`` from a ``*KEY*``
    variable) would mask every path that shares eight characters with it.
    """
    return (
        not any(c.isspace() for c in value)
        and not value.startswith(("/", "~", "."))
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


class SecretRegistry:
    """Secret values and the one pattern that finds them in any text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: dict[str, bool] = {}
        """value -> whether its fragments are masked too."""
        self._extra: set[str] = set()
        """Literal forms registered beside a secret (base64 of user:password)."""
        self._pattern: Any = None
        self._compiled_for = -1
        self._version = 0
        self._recent: dict[tuple[int, int], tuple[str, str]] = {}
        """Long texts masked lately: (id, version) -> (text, masked)."""

    def __bool__(self) -> bool:
        return bool(self._secrets or self._extra)

    def __len__(self) -> int:
        return len(self._secrets)

    def add(self, value: object, *, fragments: bool = True) -> None:
        """Register a secret; values under MIN_LENGTH characters, or not strings, are
        ignored. ``fragments``: mask its prefixes and suffixes too (when it is long)."""
        if not isinstance(value, str):
            return
        value = value.strip()
        if len(value) < MIN_LENGTH:
            return
        with self._lock:
            if value not in self._secrets or (fragments and not self._secrets[value]):
                self._secrets[value] = fragments
                self._version += 1

    def add_all(self, values: Iterable[object], *, fragments: bool = True) -> None:
        for value in values:
            self.add(value, fragments=fragments)

    def add_url(self, url: object) -> None:
        """The password of a URL (``http://bob:hunter2@host``) and its user:password
        as Basic authentication sends it (base64)."""
        if not isinstance(url, str) or "@" not in url or "://" not in url:
            return
        try:
            parts = urlsplit(url)
            user, password = parts.username, parts.password
        except ValueError:
            return
        if not password:
            return
        password = unquote(password)
        self.add(password)
        pair = f"{unquote(user or '')}:{password}".encode()
        with self._lock:
            for form in (base64.b64encode(pair).decode().rstrip("="), *_base64_cores(pair)):
                if len(form) >= FRAGMENT_MIN and form not in self._extra:
                    self._extra.add(form)
                    self._version += 1

    def mask(self, text: str) -> str:
        """``text`` with every form of every secret replaced by :data:`MASK`."""
        if not text or not self:
            return text
        pattern = self._compiled()
        if pattern is None:
            return text
        if len(text) < IN_THREAD_FROM:
            return pattern.sub(MASK, text)
        # A long text is masked once, in a thread (mask_output, warm), and found
        # here again when a front end sends it: the same object, so the same answer.
        key = (id(text), self._version)
        known = self._recent.get(key)
        if known is not None and known[0] is text:
            return known[1]
        masked = pattern.sub(MASK, text)
        if len(text) <= _RECENT_MAX_CHARS:
            with self._lock:
                self._recent[key] = (text, masked)
                while len(self._recent) > _RECENT:
                    self._recent.pop(next(iter(self._recent)))
        return masked

    def strings(self, value: Any) -> list[str]:
        """The long strings in a JSON-like value or an attrs instance's fields."""
        found: list[str] = []
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if len(item) >= IN_THREAD_FROM:
                    found.append(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list | tuple):
                stack.extend(item)
            elif hasattr(item, "__attrs_attrs__"):
                stack.extend(getattr(item, a.name) for a in item.__attrs_attrs__)
        return found

    def mask_json(self, value: Any) -> Any:
        """A JSON value (dicts, lists, strings) with every string masked."""
        if not self:
            return value
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask_json(k): self.mask_json(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.mask_json(v) for v in value]
        return value

    def clear(self) -> None:
        """Forget every secret (tests)."""
        with self._lock:
            self._secrets.clear()
            self._extra.clear()
            self._recent.clear()
            self._version += 1

    def _compiled(self) -> Any:
        with self._lock:
            if self._compiled_for != self._version:
                forms = []
                # Longest first: where forms overlap, the alternation takes the first.
                for secret, fragments in sorted(self._secrets.items(), key=lambda s: -len(s[0])):
                    forms += _forms(secret, fragments)
                forms += [re.escape(form) for form in sorted(self._extra, key=len, reverse=True)]
                self._pattern = _compile("|".join(forms)) if forms else None
                self._compiled_for = self._version
            return self._pattern


def _compile(alternation: str) -> Any:
    try:
        import re2
    except ImportError:
        return re.compile(alternation, re.IGNORECASE)
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    # Every secret's forms in one automaton: more memory than RE2's default 8 MiB
    # keeps it on the fast DFA when many secrets are registered.
    options.max_mem = 64 << 20
    try:
        return re2.compile(alternation, options)
    except re2.error:
        return re.compile(alternation, re.IGNORECASE)


SECRETS = SecretRegistry()
"""The process's secrets."""


def mask(text: str) -> str:
    return SECRETS.mask(text)


def mask_json(value: Any) -> Any:
    return SECRETS.mask_json(value)


async def warm(value: Any) -> None:
    """Mask the long strings in ``value`` now, in a thread (RE2 lets go of the GIL),
    so that masking them again as they are sent finds the answer ready."""
    if SECRETS:
        long = SECRETS.strings(value)
        if long:
            await asyncio.to_thread(lambda: [SECRETS.mask(text) for text in long])


async def mask_output(text: str) -> str:
    """``text`` masked, off the event loop when it is long."""
    if len(text) < IN_THREAD_FROM or not SECRETS:
        return SECRETS.mask(text)
    return await asyncio.to_thread(SECRETS.mask, text)


class RedactingFilter(logging.Filter):
    """Masks secrets in a record's message, arguments and traceback, on a handler
    (so records of every logger that reach it are masked, pygls's included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not SECRETS:
            return True
        record.msg = SECRETS.mask(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = SECRETS.mask(record.exc_text)
        if record.stack_info:
            record.stack_info = SECRETS.mask(record.stack_info)
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """A RedactingFilter on every handler of ``logger`` (default: the root logger)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
