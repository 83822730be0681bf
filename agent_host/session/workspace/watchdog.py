"""Ends a host's commands when the host's process dies without ending them.

A command runs in a session of its own (so that everything it starts can be
ended with it), which also means nothing ends it when the process that started
it is killed: a SIGKILLed server would leave ``make watch`` or ``sleep 30``
running, still changing files no capture will see. So each host that runs
commands starts one watchdog, this file run as a script (it imports only
:mod:`.processes`, beside it, and starts in milliseconds), in a session of its
own, and tells it on a pipe each command's marker token before it is started
and once it is over (``tTOKEN``, ``xTOKEN``), its session once started and once
ended (``+SID``, ``-SID``), and each detached process it left
(``dPID START TOKEN``).
When the pipe closes -- the host closed it, or its process died however it died
-- the watchdog ends every session still named and every process carrying a
token still named (SIGKILL), and every detached process that is still the one
named (SIGTERM, then SIGKILL), and exits.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    # Started by path: processes.py is a module beside this file, not the package.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import processes

    # A ^C or hang-up sent to the host's terminal or group is the host's to act on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    tokens: set[str] = set()
    sessions: set[int] = set()
    detached: dict[int, processes.Detached] = {}
    for raw in sys.stdin.buffer:
        line = raw.decode("ascii", "replace").strip()
        kind, rest = line[:1], line[1:]
        try:
            if kind == "t":
                tokens.add(rest)
            elif kind == "x":
                tokens.discard(rest)
            elif kind == "+":
                sessions.add(int(rest))
            elif kind == "-":
                sessions.discard(int(rest))
            elif kind == "d":
                pid, start, token = rest.split(" ")
                detached[int(pid)] = processes.Detached(int(pid), int(start), token)
        except ValueError:
            continue  # not a line the host writes
    for session in sessions:
        processes.kill_session(session)
    if tokens:  # a command started, or about to be, whose session was never named
        processes.kill_marked(tokens)
    processes.end_detached(list(detached.values()))


if __name__ == "__main__":
    main()
