"""Ending what a command started: its session's processes, and the ones that left it.

A command's shell leads a session of its own (``start_new_session``), so everything
it starts -- background jobs included, even those job control put in groups of
their own -- shares the shell's session id. When the shell exits, what is left of
the session is ended: SIGTERM, then SIGKILL after a short grace.

A process that called ``setsid`` left on purpose (a dev server, a daemon). It is
found by a marker variable every command's environment carries
(:data:`MARKER`, one token per command): such a process is reported as
*detached* and left running until the host that ran the command closes, which
ends it (:class:`CommandProcesses`). A process that also cleared its environment
(``env -i``) is not found.

The survey reads ``/proc`` (Linux). Elsewhere only the shell's process group is
ended, and nothing is reported as detached.
"""

from __future__ import annotations

import contextvars
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import attrs

MARKER = "AGENT_HOST_COMMAND"
"""The variable naming the command a process descends from (its value: a token)."""

TERM_GRACE = 0.5
"""How long what is left of a command has between SIGTERM and SIGKILL."""

log = logging.getLogger(__name__)
_POLL = 0.02
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = "/proc"


@attrs.frozen
class Proc:
    pid: int
    pgrp: int
    session: int
    start: int
    """Start time in clock ticks since boot: a pid reused later starts later."""
    zombie: bool


@attrs.frozen
class Detached:
    """A process a command started that put itself in a session of its own."""

    pid: int
    start: int
    token: str


def survey() -> list[Proc] | None:
    """Every process on the machine (None: no /proc to read)."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    procs = []
    for name in names:
        if name.isdigit():
            proc = read_proc(int(name))
            if proc is not None:
                procs.append(proc)
    return procs


def read_proc(pid: int) -> Proc | None:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None  # gone already
    # The command name may hold spaces and parentheses: the fields follow the last ')'.
    fields = data[data.rindex(b")") + 2 :].split()
    return Proc(
        pid=pid,
        pgrp=int(fields[2]),
        session=int(fields[3]),
        start=int(fields[19]),
        zombie=fields[0] in (b"Z", b"X"),
    )


def now_ticks() -> int | None:
    """The clock in /proc's start-time unit (ticks since boot), a tick early; None
    without /proc."""
    try:
        with open(f"{_PROC}/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return int(uptime * _TICKS) - 1


def has_marker(pid: int, token: str) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        return False  # gone, or not ours to read
    return f"{MARKER}={token}".encode() in environ.split(b"\0")


def end_session(session: int, token: str, since: int | None) -> list[Detached]:
    """End what is left of the command whose shell led ``session`` (blocking: run it
    in a thread); return the processes of the command that left the session.

    ``since``: :func:`now_ticks` before the shell started (None: no process is
    reported as detached); only processes started since are checked for the marker."""
    procs = survey()
    if procs is None:
        _end_group(session)
        return []
    detached = []
    if since is not None:
        for p in procs:
            if (
                p.session != session
                and p.start >= since
                and not p.zombie
                and has_marker(p.pid, token)
            ):
                detached.append(Detached(p.pid, p.start, token))
    if _members(procs, session):
        _signal_session(session, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE
        while time.monotonic() < deadline:
            time.sleep(_POLL)
            if not _members(survey() or [], session):
                return detached
        _signal_session(session, signal.SIGKILL)
    return detached


def kill_marked(tokens: set[str]) -> None:
    """SIGKILL the processes carrying any of ``tokens`` (:data:`MARKER`), and the
    sessions they are in (Linux: a survey of /proc)."""
    for p in survey() or []:
        if not p.zombie and any(has_marker(p.pid, token) for token in tokens):
            if p.session == p.pid:
                kill_session(p.session)
            with suppress(ProcessLookupError, PermissionError):
                os.kill(p.pid, signal.SIGKILL)


def kill_session(session: int) -> None:
    """SIGKILL everything in ``session`` now (a timeout, a cancel, the host closing)."""
    _signal_session(session, signal.SIGKILL)


def end_detached(processes: list[Detached]) -> None:
    """SIGTERM, then SIGKILL after the grace, the detached processes that are still
    the ones recorded (same pid, start time and marker: not a reused pid)."""
    alive = [d for d in processes if _still(d)]
    for d in alive:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(d.pid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while alive and time.monotonic() < deadline:
        time.sleep(_POLL)
        alive = [d for d in alive if _still(d)]
    for d in alive:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(d.pid, signal.SIGKILL)


WATCHDOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "watchdog.py")
"""The watchdog script (run by path, see :mod:`.watchdog`)."""


class Watchdog:
    """This process's line to a watchdog process (:mod:`.watchdog`), which ends what
    it was told of when this process dies, however it dies (the pipe closes).

    Started on the first :meth:`tell`, and again, told ``known()`` first, if it died
    or this process is a fork's child (the parent's watches the parent). It runs
    isolated with an empty environment: it needs nothing, and the host's secrets
    have no business there."""

    def __init__(self, known: Callable[[], list[str]]) -> None:
        self._known = known
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._owner: int | None = None

    def tell(self, *lines: str) -> None:
        with self._lock:
            process = self._process
            if process is not None and (self._owner != os.getpid() or process.poll() is not None):
                process = self._process = None
            if process is None:
                try:
                    process = self._process = subprocess.Popen(
                        [sys.executable, "-I", WATCHDOG],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        env={},
                        start_new_session=True,  # not ended with the host's group
                    )
                except OSError as exc:
                    log.warning(
                        "cannot start the process watchdog: %s; a host killed by SIGKILL "
                        "may leave its commands and MCP servers running",
                        exc,
                    )
                    return
                self._owner = os.getpid()
                lines = (*self._known(), *lines)
            try:
                process.stdin.write("".join(f"{line}\n" for line in lines).encode())  # type: ignore[union-attr]
                process.stdin.flush()  # type: ignore[union-attr]
            except OSError as exc:  # it died meanwhile: the next line starts another
                log.warning("the process watchdog is gone: %s", exc)

    def close(self) -> None:
        """Let the watchdog go (it ends what it still knows of, then exits)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None and self._owner == os.getpid():
            with suppress(OSError):
                process.stdin.close()  # type: ignore[union-attr]
            process.wait()


class CommandProcesses:
    """What a host's commands started that may outlive a call: the sessions of
    commands running now, and detached processes. :meth:`close` ends them all,
    and a watchdog process (:class:`Watchdog`) ends them if the host's process
    dies without closing."""

    def __init__(self) -> None:
        self.running: set[int] = set()
        self.detached: list[Detached] = []
        self._starting: set[str] = set()
        """Tokens of commands running (or about to run)."""
        self._watchdog = Watchdog(self._known)

    def starting(self, token: str) -> None:
        """A command whose processes carry ``token`` (:data:`MARKER`) is about to be
        started: the watchdog ends them should this process die before
        :meth:`started` (or at any time after)."""
        self._starting.add(token)
        self._watchdog.tell(f"t{token}")

    def started(self, session: int) -> None:
        self.running.add(session)
        self._watchdog.tell(f"+{session}")

    def ended(self, session: int, token: str, detached: list[Detached]) -> None:
        self.running.discard(session)
        self._starting.discard(token)
        self.detached.extend(detached)
        self._watchdog.tell(
            f"-{session}", f"x{token}", *(f"d{d.pid} {d.start} {d.token}" for d in detached)
        )

    def close(self) -> None:
        """End everything (blocking, up to :data:`TERM_GRACE`)."""
        for session in list(self.running):
            kill_session(session)
        self.running.clear()
        end_detached(self.detached)
        self.detached.clear()
        self._watchdog.close()

    def _known(self) -> list[str]:
        known = [f"t{t}" for t in self._starting] + [f"+{s}" for s in self.running]
        return known + [f"d{d.pid} {d.start} {d.token}" for d in self.detached]


_watched_sessions: set[int] = set()
_sessions_watchdog = Watchdog(lambda: [f"+{s}" for s in _watched_sessions])


def watch_session(session: int) -> None:
    """Have ``session`` (a session leader's pid: an MCP server's) and everything in
    it killed if this process dies before :func:`forget_session`. PR_SET_PDEATHSIG
    would reach the leader only, not what it started."""
    _watched_sessions.add(session)
    _sessions_watchdog.tell(f"+{session}")


def forget_session(session: int) -> None:
    """``session`` was ended by its owner: a pid reused later is never signalled."""
    _watched_sessions.discard(session)
    _sessions_watchdog.tell(f"-{session}")


current_processes: contextvars.ContextVar[CommandProcesses | None] = contextvars.ContextVar(
    "agent_host_command_processes", default=None
)
"""The tracker of the host whose turn is running (None outside a host's turn)."""


@contextmanager
def tracking(processes: CommandProcesses) -> Iterator[None]:
    token = current_processes.set(processes)
    try:
        yield
    finally:
        current_processes.reset(token)


def _members(procs: list[Proc], session: int) -> bool:
    return any(p.session == session and not p.zombie for p in procs)


def _signal_session(session: int, sig: signal.Signals) -> None:
    # The shell's own group first: it is most of the session, and needs no /proc.
    _signal_group(session, sig)
    for p in survey() or []:
        if p.session == session and not p.zombie and p.pgrp != session:
            # Job control (``set -m``) put a background job in a group of its own.
            _signal_group(p.pgrp, sig)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # The kernel does not hand out a pid still in use as a group id, so a group id
    # taken from a living member names that group.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _end_group(pgid: int) -> None:
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while time.monotonic() < deadline:
        time.sleep(_POLL)
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
    _signal_group(pgid, signal.SIGKILL)


def _still(d: Detached) -> bool:
    proc = read_proc(d.pid)
    return (
        proc is not None
        and not proc.zombie
        and proc.start == d.start
        and has_marker(d.pid, d.token)
    )
