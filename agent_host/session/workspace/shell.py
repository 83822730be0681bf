"""run_shell: a command under ``/bin/sh -c`` in its own process group, output capped."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from contextlib import suppress
from pathlib import Path

from .base import CommandResult

# How long output may keep flowing after the shell exits (a background child holding
# the pipe) before what is left of the process group is killed.
_PIPE_GRACE = 1.0


async def run_shell(
    command: str, cwd: Path, timeout: float = 120.0, max_output: int = 30_000
) -> CommandResult:
    """Run ``command`` under ``/bin/sh -c`` in its own process group.

    The group -- the shell and everything it started -- is killed on timeout, when
    the awaiting task is cancelled, and when children still hold the output pipe
    open after the shell exited; so no command outlives its call unless it
    detached itself on purpose (its own session, output redirected).
    """
    loop = asyncio.get_running_loop()
    capture = _Capture(max_output)
    # A protocol rather than asyncio.subprocess: Process.wait() also waits for the
    # pipes to close, which a background child can hold open for ever.
    transport, protocol = await loop.subprocess_exec(
        lambda: _ShellProtocol(loop, capture),
        "/bin/sh",
        "-c",
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pgid = transport.get_pid()
    timed_out = False
    try:
        done, _ = await asyncio.wait({protocol.exited}, timeout=timeout)
        if not done:
            timed_out = True
            _kill_group(pgid)
            await protocol.exited
        done, _ = await asyncio.wait({protocol.output_closed}, timeout=_PIPE_GRACE)
        if not done:
            _kill_group(pgid)
            # Anything that escaped the group (its own setsid) and still holds the
            # pipe is abandoned here: close() below drops our end.
            await asyncio.wait({protocol.output_closed}, timeout=_PIPE_GRACE)
    except BaseException:
        _kill_group(pgid)
        raise
    finally:
        transport.close()
    output, truncated = capture.render()
    return CommandResult(
        exit_code=None if timed_out else transport.get_returncode(),
        output=output,
        timed_out=timed_out,
        truncated=truncated,
    )


def _kill_group(pgid: int) -> None:
    # The shell leads its group (start_new_session), so its pid is the group id;
    # the kernel does not hand out a pid still in use as a group id.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _ShellProtocol(asyncio.SubprocessProtocol):
    def __init__(self, loop: asyncio.AbstractEventLoop, capture: _Capture) -> None:
        self.capture = capture
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.capture.add(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class _Capture:
    """Keeps the head and tail of a stream in bounded memory however long it runs."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max(max_chars, 2)
        # A character is at most 4 UTF-8 bytes, so this many bytes always decode to
        # at least half the character budget at each end.
        self.keep_bytes = 2 * self.max_chars
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep_bytes * 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
        self.tail += chunk
        if len(self.tail) > 4 * self.keep_bytes:
            del self.tail[: -self.keep_bytes]

    def render(self) -> tuple[str, bool]:
        keep = self.max_chars // 2
        if self.total <= len(self.head):
            text = self.head.decode("utf-8", errors="replace")
            if len(text) <= self.max_chars:
                return text, False
            first, last = text[:keep], text[-keep:]
        else:
            tail = bytes(self.tail[-self.keep_bytes :])
            # Start the tail on a character boundary, not inside a UTF-8 sequence.
            skip = 0
            while skip < 3 and skip < len(tail) and 0x80 <= tail[skip] < 0xC0:
                skip += 1
            first = self.head.decode("utf-8", errors="replace")[:keep]
            last = tail[skip:].decode("utf-8", errors="replace")[-keep:]
        first, last = _cut_at_newline(first, last)
        omitted = self.total - len(first.encode()) - len(last.encode())
        marker = (
            f"\n\n[... output truncated: {omitted:,} of {self.total:,} bytes omitted "
            "from the middle ...]\n\n"
        )
        return first + marker + last, True


def _cut_at_newline(first: str, last: str) -> tuple[str, str]:
    # Whole lines read better than a cut mid-line, when that costs under half the budget.
    end = first.rfind("\n")
    if end >= len(first) // 2:
        first = first[: end + 1]
    start = last.find("\n")
    if 0 <= start < len(last) // 2:
        last = last[start + 1 :]
    return first, last
