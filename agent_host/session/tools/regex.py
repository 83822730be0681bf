"""grep's regular expressions, matched so that no pattern can stall the server.

Python's ``re`` backtracks: ``(a+)+$`` on a 30-character line takes seconds, and
it holds the GIL all that time, so a thread does not help -- the event loop
(session/list, session/cancel) waited with it. Patterns go to RE2 instead, which
matches in linear time and releases the GIL while it does. The few patterns RE2
refuses (lookarounds, backreferences, possessive quantifiers) run in Python ``re``
in a child process that is killed when it takes too long.

RE2's ``\\b \\w \\d \\s`` (and their negations) know only ASCII, Python's know Unicode:
a pattern using them is matched on a file that is not pure ASCII by the ``regex``
package instead (``re``'s semantics, bounded by a timeout, the GIL released), so
``\\bab\\b`` finds no word in ``abé`` on either path.
"""

from __future__ import annotations

import asyncio
import re
import struct
import sys
import time
from functools import cache
from typing import Any

from ..errors import ToolError

FALLBACK_SECONDS = 10.0
TOO_SLOW = (
    "the pattern took too long: simplify it (nested quantifiers like (a+)+ can take "
    "exponential time)"
)
Hit = tuple[int, bytes]
"""A matching line: its number (from 1) and its bytes."""


# An unescaped \b \B \w \W \d \D \s \S: classes whose meaning RE2 and re differ on
# beyond ASCII.
_UNICODE_CLASSES = re.compile(r"(?<!\\)(?:\\\\)*\\[bBwWdDsS]")


@cache
def _regex() -> Any:
    """The ``regex`` package, imported on first use."""
    import regex

    return regex


@cache
def _re2() -> Any:
    """RE2, imported on first use: the server's start-up does without it."""
    try:
        import re2
    except ImportError:
        return None
    return re2


class Re2Pattern:
    """A pattern RE2 accepts; :meth:`hits` runs in a thread without holding the GIL."""

    def __init__(self, compiled: Any, whole_text: bool, unicode: Any = None) -> None:
        self._regex = compiled
        self._whole_text = whole_text
        self._unicode = unicode
        """The pattern in ``regex``, when it uses classes RE2 knows only in ASCII."""

    def hits(self, data: bytes, room: int) -> list[Hit]:
        """The first ``room`` lines of ``data`` (UTF-8) the pattern matches."""
        if self._unicode is not None and not data.isascii():
            return self._unicode_hits(data, room)
        if b"\r" in data:
            # Lines as split_lines numbers them: \r\n ends a line as \n does, and so
            # does a final \r.
            data = data.replace(b"\r\n", b"\n")
            if data.endswith(b"\r"):
                data = data[:-1] + b"\n"
        if not self._whole_text:
            return self._line_by_line(data, room)
        # One search over the whole text finds the next candidate in C; only its
        # line is checked again alone (a match may run across a line break).
        found: list[Hit] = []
        pos, number, counted = 0, 1, 0
        while pos <= len(data):
            match = self._regex.search(data, pos)
            if match is None:
                break
            start = match.start()
            line_start = data.rfind(b"\n", 0, start) + 1
            if line_start == len(data):
                break  # the end of the text after its final line break: no line
            number += data.count(b"\n", counted, line_start)
            counted = line_start
            line_end = data.find(b"\n", start)
            if line_end < 0:
                line_end = len(data)
            line = data[line_start:line_end]
            if match.end() <= line_end or self._regex.search(line):
                found.append((number, line))
                if len(found) >= room:
                    break
            pos = line_end + 1
        return found

    def _unicode_hits(self, data: bytes, room: int) -> list[Hit]:
        from .files import split_lines

        deadline = time.monotonic() + FALLBACK_SECONDS
        found: list[Hit] = []
        text = data.decode("utf-8", errors="surrogateescape")
        for number, line in enumerate(split_lines(text), 1):
            try:
                matched = self._unicode.search(
                    line, timeout=max(deadline - time.monotonic(), 0.001), concurrent=True
                )
            except TimeoutError:
                raise ToolError(TOO_SLOW) from None
            if matched:
                found.append((number, line.encode("utf-8", errors="surrogateescape")))
                if len(found) >= room:
                    break
        return found

    def _line_by_line(self, data: bytes, room: int) -> list[Hit]:
        found: list[Hit] = []
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        for number, line in enumerate(lines, 1):
            if self._regex.search(line):
                found.append((number, line))
                if len(found) >= room:
                    break
        return found


# \A and \z mean the start and end of each line when lines are matched one by one,
# but of the text when it is searched whole; so does ^ with multi-line turned off.
_TEXT_ANCHORS = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-")


def compile_pattern(pattern: str) -> Re2Pattern | PythonPattern:
    """RE2 if it takes the pattern, else Python ``re``; ToolError if neither does."""
    re2 = _re2()
    if re2 is not None:
        options = re2.Options()
        options.log_errors = False  # RE2 logs refusals to stderr; ours go to the model
        try:
            compiled = re2.compile("(?m)" + pattern, options)
        except re2.error:
            pass  # Python syntax RE2 lacks: try re, below
        else:
            return Re2Pattern(
                compiled,
                whole_text=not _TEXT_ANCHORS.search(pattern),
                unicode=_unicode_pattern(pattern),
            )
    try:
        re.compile(pattern)
    except re.error as e:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {e}; it uses Python `re` syntax "
            "(escape literal characters like ( [ . * + ? with a backslash)"
        ) from None
    except (OverflowError, RecursionError) as e:
        raise ToolError(f"the regular expression {pattern!r} is too large: {e}") from None
    return PythonPattern(pattern)


def _unicode_pattern(pattern: str) -> Any:
    """``pattern`` in ``regex`` (``re``'s syntax and meaning) when it uses a class
    RE2 reads as ASCII only; None when it uses none, or ``regex`` refuses it."""
    if not _UNICODE_CLASSES.search(pattern):
        return None
    regex = _regex()
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, OverflowError, RecursionError):
        return None


# The child: records of (length, room) and that many bytes of text whose lines are
# separated by \n; answers each with the matching line numbers. The first record
# is the pattern.
_CHILD = r"""
import re, struct, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
def record():
    head = inp.read(8)
    if len(head) < 8:
        sys.exit(0)
    size, room = struct.unpack(">II", head)
    return inp.read(size).decode(), room
regex = re.compile(record()[0])
while True:
    text, room = record()
    numbers = []
    for number, line in enumerate(text.split("\n"), 1):
        if regex.search(line):
            numbers.append(number)
            if len(numbers) >= room:
                break
    answer = " ".join(map(str, numbers)).encode()
    out.write(struct.pack(">I", len(answer)) + answer)
    out.flush()
"""


class PythonPattern:
    """A pattern only Python ``re`` takes, matched in a child process.

    The child is started on the first file and searches every file of one grep;
    all of them together get :data:`FALLBACK_SECONDS`, after which it is killed.
    Use as ``async with``, which ends the child.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._child: asyncio.subprocess.Process | None = None
        self._deadline = 0.0

    async def __aenter__(self) -> PythonPattern:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def hits(self, lines: list[str], room: int) -> list[int]:
        """The numbers (from 1) of the first ``room`` matching ``lines``."""
        if not lines:
            return []
        if self._child is None:
            self._deadline = time.monotonic() + FALLBACK_SECONDS
        try:
            return await asyncio.wait_for(
                self._ask("\n".join(lines), room), self._deadline - time.monotonic()
            )
        except TimeoutError:
            await self.close()
            raise ToolError(TOO_SLOW) from None

    async def _ask(self, text: str, room: int) -> list[int]:
        if self._child is None:
            self._child = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-S", "-c", _CHILD,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            self._send(self.pattern, 0)
        self._send(text, room)
        assert self._child.stdout is not None
        try:
            await self._child.stdin.drain()  # type: ignore[union-attr]
            (size,) = struct.unpack(">I", await self._child.stdout.readexactly(4))
            answer = await self._child.stdout.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            raise ToolError(f"matching {self.pattern!r} failed: the matcher ended ({e})") from None
        return [int(n) for n in answer.split()]

    def _send(self, text: str, room: int) -> None:
        data = text.encode("utf-8", errors="surrogatepass")
        assert self._child is not None and self._child.stdin is not None
        self._child.stdin.write(struct.pack(">II", len(data), room) + data)

    async def close(self) -> None:
        child, self._child = self._child, None
        if child is None or child.returncode is not None:
            return
        child.kill()
        await child.wait()
