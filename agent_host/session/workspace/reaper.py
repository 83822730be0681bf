"""Ending process sessions this process started, even when it dies by SIGKILL.

A process that leads a session of its own (an MCP server started with
``start_new_session``) gets no SIGHUP when its parent dies, and PR_SET_PDEATHSIG
would reach only the process itself, not what it started. So a small keeper
process watches this one instead: it holds the read end of a pipe whose write end
only this process has; the kernel closes that end when this process exits, however
it exits, and the keeper then SIGKILLs every session still registered with it.

The keeper is started on the first :func:`watch`, one per process, in a session of
its own (a Ctrl-C to the terminal's group does not reach it); it runs ``python -S``
and imports nothing but ``os`` and ``signal``. A session is :func:`forget`-ten once
its owner has ended it, so a pid reused later is never signalled. Linux (``/proc``)
finds every member of a session; elsewhere the leader's process group is signalled.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from typing import IO

log = logging.getLogger(__name__)

# The keeper. Its stdin: "+<sid>\n" registers a session, "-<sid>\n" drops it; at end
# of input (this process gone), what is still registered is killed.
_KEEPER = r"""
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
sessions = set()
for line in os.fdopen(0, "rb"):
    sid = int(line[1:])
    (sessions.add if line[:1] == b"+" else sessions.discard)(sid)
groups = set(sessions)
try:
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) in sessions:
                groups.add(int(fields[2]))
except OSError:
    pass
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""

_lock = threading.Lock()
_keeper: subprocess.Popen[bytes] | None = None
_owner_pid: int | None = None


def watch(session: int) -> None:
    """Have ``session`` (a session leader's pid) killed if this process dies."""
    _send(f"+{session}\n")


def forget(session: int) -> None:
    """``session`` has been ended by its owner: the keeper no longer kills it."""
    _send(f"-{session}\n")


def _send(line: str) -> None:
    with _lock:
        pipe = _pipe()
        if pipe is None:
            return
        try:
            pipe.write(line.encode())
            pipe.flush()
        except OSError as exc:  # the keeper died (killed by hand): start another next time
            log.warning("the process keeper is gone (%s); starting a new one", exc)
            _reset()
            pipe = _pipe()
            if pipe is not None:
                pipe.write(line.encode())
                pipe.flush()


def _pipe() -> IO[bytes] | None:
    global _keeper, _owner_pid
    if _keeper is not None and _owner_pid != os.getpid():
        _keeper = None  # a fork's child: the keeper watches the parent, not us
    if _keeper is None:
        try:
            _keeper = subprocess.Popen(
                [sys.executable, "-S", "-c", _KEEPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},  # it needs nothing, and the host's secrets have no business there
                start_new_session=True,
            )
        except OSError as exc:
            log.warning(
                "cannot start the process keeper: %s; a host killed by SIGKILL "
                "may leave its MCP servers running",
                exc,
            )
            return None
        _owner_pid = os.getpid()
    return _keeper.stdin


def _reset() -> None:
    global _keeper
    if _keeper is not None:
        _keeper.poll()
    _keeper = None
