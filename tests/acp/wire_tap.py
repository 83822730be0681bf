"""Run an ACP agent with both directions of its stdio recorded: ``python wire_tap.py
LOG_DIR -- COMMAND...``.

A real editor (CodeCompanion, acpx) starts this in place of ``agent-host acp``; it
passes the client's lines to the agent and the agent's back unchanged, and appends
each line to ``LOG_DIR/<pid>.jsonl`` as ``{"from": "client"|"agent", "line": ...}``
so tests/acp/schema_check.py can validate every message the agent sent (and know
which request each response answers). One file per wrapper: editors may run
several agents at once. SIGTERM/SIGINT are passed on to the agent; the wrapper
exits with the agent's status.

Self-contained (the standard library only): editors start it with any Python.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: wire_tap.py LOG_DIR -- COMMAND...", file=sys.stderr)
        return 2
    log_dir, command = Path(argv[0]), argv[2:]
    log_dir.mkdir(parents=True, exist_ok=True)
    log = (log_dir / f"{os.getpid()}.jsonl").open("a", encoding="utf-8")
    lock = threading.Lock()

    def record(side: str, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            return
        with lock:
            log.write(json.dumps({"from": side, "line": line}) + "\n")
            log.flush()

    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def forward_signal(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward_signal)
    signal.signal(signal.SIGINT, forward_signal)

    def pump_client(into: IO[bytes]) -> None:
        try:
            for raw in iter(sys.stdin.buffer.readline, b""):
                record("client", raw)
                into.write(raw)
                into.flush()
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                into.close()  # the client hung up: so does the agent's stdin
            except OSError:
                pass

    threading.Thread(target=pump_client, args=(child.stdin,), daemon=True).start()
    out = sys.stdout.buffer
    for raw in iter(child.stdout.readline, b""):
        record("agent", raw)
        try:
            out.write(raw)
            out.flush()
        except (BrokenPipeError, OSError):
            break
    code = child.wait()
    log.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
