"""run_shell: a command under ``/bin/sh -c`` in a session of its own, its environment
under the policy in force, confined by the sandbox in force, output capped; nothing
it started outlives the call."""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..environment import current_policy
from ..limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT
from ..sandbox import Sandbox, sandbox_in_force
from . import processes as procs
from .base import CommandResult

# How long output may keep flowing after the shell exits (a background child holding
# the pipe) before what is left of the command is ended.
_PIPE_GRACE = 1.0


async def run_shell(
    command: str,
    cwd: Path,
    timeout: float = COMMAND_DEFAULT_TIMEOUT,
    max_output: int = COMMAND_MAX_OUTPUT,
    *,
    env: Mapping[str, str] | None = None,
    roots: Sequence[Path] | None = None,
    sandbox: Sandbox | None = None,
) -> CommandResult:
    """Run ``command`` under ``/bin/sh -c`` in a session (and process group) of its own.

    ``env``: the command's environment (default: this process's under the policy
    in force, :data:`~..environment.current_policy`). ``roots``: the folders a
    ``workspace-write`` sandbox lets it write (default: ``cwd``); the sandbox is
    ``sandbox``, else the one in force (:func:`~..sandbox.sandbox_in_force`):
    SandboxUnavailable if
    it must confine the command and cannot. Confined, the command runs in a pid
    namespace of its own: what it started, ``setsid`` or not, ends with it. The
    session -- the shell
    and everything it started -- is killed on timeout and when the awaiting task
    is cancelled; when the shell exits, what is left of it is ended (SIGTERM,
    then SIGKILL) once the output pipe closes or after a grace. A process that
    made a session of its own (``setsid``) is left running and reported in
    ``detached``; the host whose turn ran the command ends it when it closes.
    """
    loop = asyncio.get_running_loop()
    capture = _Capture(max_output)
    token = secrets.token_hex(8)
    environ = dict(current_policy.get().environment() if env is None else env)
    environ[procs.MARKER] = token
    launch = sandbox_in_force(sandbox).launch(
        ["/bin/sh", "-c", command], roots=roots or [cwd], cwd=cwd, env=environ
    )
    since = procs.now_ticks()
    tracker = procs.current_processes.get()
    if tracker is not None:
        tracker.starting(token)  # before the spawn: a crash right after it is covered
    # A protocol rather than asyncio.subprocess: Process.wait() also waits for the
    # pipes to close, which a background child can hold open for ever.
    transport, protocol = await loop.subprocess_exec(
        lambda: _ShellProtocol(loop, capture),
        *launch.argv,
        cwd=cwd,
        env=launch.env,
        preexec_fn=launch.preexec,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    # The shell leads its session and group, so its pid is both their ids.
    session = transport.get_pid()
    if tracker is not None:
        tracker.started(session)
    timed_out = False
    detached: list[procs.Detached] = []
    try:
        done, _ = await asyncio.wait({protocol.exited}, timeout=timeout)
        if not done:
            timed_out = True
            procs.kill_session(session)
            await protocol.exited
        done, _ = await asyncio.wait({protocol.output_closed}, timeout=_PIPE_GRACE)
        detached = await asyncio.to_thread(procs.end_session, session, token, since)
        if not done:
            # Anything that escaped the session and still holds the pipe is
            # abandoned here: close() below drops our end.
            await asyncio.wait({protocol.output_closed}, timeout=_PIPE_GRACE)
    except BaseException:
        procs.kill_session(session)
        raise
    finally:
        transport.close()
        if tracker is not None:
            tracker.ended(session, token, detached)
    output, truncated = capture.render()
    if launch.note:
        output = f"{launch.note}\n{output}"
    exit_code = None if timed_out else transport.get_returncode()
    denial = launch.denial(output, exit_code)
    if detached:
        pids = ", ".join(str(d.pid) for d in detached)
        output += f"\n[left running in a session of its own (setsid): pid {pids}]\n"
    return CommandResult(
        exit_code=exit_code,
        output=output,
        timed_out=timed_out,
        truncated=truncated,
        detached=[d.pid for d in detached],
        sandboxed=launch.confined,
        sandbox_denial=denial,
    )


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
