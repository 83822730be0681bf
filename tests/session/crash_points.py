"""Killing a restore, an undo, a fork, a turn or a new session's first prompt before each of
its durable steps, one run per step.

Run as a process (``python -m tests.session.crash_points``) that reads one JSON
job per line on stdin and answers one JSON line per job on stdout. Each job is
run in a child forked from this process, so the imports are paid once. The child
counts its durable steps -- every fsync, fdatasync, rename, replace and unlink,
every pwrite (how the file store writes its log: a killed process loses nothing
it wrote, only a power cut loses what was not synced, so without the write a kill
could never land before an append), every SQLite commit and every PostgreSQL
commit and statement outside a transaction (see _count_postgres) -- and SIGKILLs
itself just before step ``kill_at``: a crash at exactly that point.
A child that gets to the end reports how many steps it made (``kill_at`` 0 runs
to the end), so the caller can enumerate every point.

A job may instead name a state to crash in: ``kill_when_present``, a glob, kills
the child just before the first durable step at which a path matches it (say, a
write's temp file). Step numbers cannot: the steps of the threads a turn runs
interleave differently from run to run, and a state that lasts one step (a temp
file, between its fsync and its rename) can fall between two runs' numbers.

killed_at and every_step do the same from within a test, for one operation of a
store's own code (a batch's write, a gc, an index's compaction): no job runner.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

from agent_host.session.host import AgentHost
from agent_host.session.store.sqlite import SqliteCheckpointer

STEPS = ("fsync", "fdatasync", "rename", "replace", "unlink", "pwrite")


class _Counter:
    def __init__(self, kill_at: int, kill_when_present: str | None = None) -> None:
        self.kill_at = kill_at
        self.kill_when_present = kill_when_present
        self.steps = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps == self.kill_at or (
            self.kill_when_present is not None and glob.glob(self.kill_when_present)
        ):
            os.kill(os.getpid(), signal.SIGKILL)


def _install(counter: _Counter, extra_steps: Iterable[str] = ()) -> None:
    """Make every call of the os functions STEPS (and ``extra_steps``) names a step."""
    for name in (*STEPS, *extra_steps):
        real = getattr(os, name)

        def counted(*args, _real=real, **kwargs):
            counter.step()
            return _real(*args, **kwargs)

        setattr(os, name, counted)


def killed_at(
    kill_at: int, work: Callable[[_Counter], object], extra_steps: Iterable[str] = ()
) -> tuple[bool, int]:
    """Run ``work`` in a forked child that counts its durable steps (STEPS and
    ``extra_steps``, os functions) and SIGKILLs itself just before step ``kill_at``:
    whether it was killed, and the steps it made when it was not.

    For a test of one operation of the stores' own code, in-process: no job runner,
    no asyncio unless ``work`` runs it. ``work`` gets the counter to count steps the
    os functions do not show (a SQLite commit: _CountedConnection)."""
    read, write = os.pipe()
    report = os.write  # the real one: "write" may be one of the steps
    pid = os.fork()
    if pid == 0:  # the child: killed, or reports its steps and exits, never returns
        try:
            os.close(read)
            counter = _Counter(kill_at)
            _install(counter, extra_steps)
            work(counter)
            report(write, str(counter.steps).encode())
        except BaseException:  # noqa: BLE001 - not back into the parent's pytest
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        steps = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True, 0
    assert os.WEXITSTATUS(status) == 0
    return False, int(steps)


def every_step(run_case: Callable[[int], tuple[bool, int]]) -> int:
    """``run_case(k)`` for k = 1, 2, ... -- each a run killed before step k, checked --
    until a run is not killed: the steps that run made (one fewer than its k)."""
    k = 1
    while True:
        killed, steps = run_case(k)
        if not killed:
            break
        k += 1
    assert steps == k - 1, (steps, k)  # a kill landed before each of its steps
    return steps


class _CountedConnection:
    """A sqlite3 connection whose COMMITs are durable steps. (sqlite3's own
    type cannot be patched, and its fsyncs happen in C, out of our sight.)"""

    def __init__(self, conn, counter: _Counter) -> None:
        self._conn = conn
        self._counter = counter

    def execute(self, sql, *args):
        if sql == "COMMIT":
            self._counter.step()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


LEASE_WATCHDOG = "agent-host lease watchdog"
"""The thread that probes the lease connection (see postgres_leases): on a clock."""


def _count_postgres(counter: _Counter) -> None:
    """Every commit a PostgreSQL store makes, and every statement it sends outside a
    transaction, is a step: what the server makes durable (a kill lands between
    them). A statement inside a transaction is not: a kill before it leaves what a
    kill before the commit leaves (the server rolls the transaction back), and how
    many there are varies from run to run (a capture reads a file again, so touches
    its blob again, when its mtime was recent: ``_RACY_NS``, a matter of time). Nor
    are a new connection's SET (pooled connections are opened as threads ask for
    them) and the lease watchdog's probe (every few seconds of the clock)."""
    import psycopg
    from psycopg.pq import TransactionStatus

    def durable(cursor: psycopg.Cursor, query: object) -> bool:
        conn = cursor.connection
        if not conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
            return False  # its transaction's commit is the step
        if isinstance(query, str) and query.lstrip().upper().startswith("SET "):
            return False
        return threading.current_thread().name != LEASE_WATCHDOG

    for name in ("execute", "executemany"):
        real = getattr(psycopg.Cursor, name)

        def counted(self, query, *args, _real=real, **kwargs):
            if durable(self, query):
                counter.step()
            return _real(self, query, *args, **kwargs)

        setattr(psycopg.Cursor, name, counted)
    real_commit = psycopg.Connection.commit

    def counted_commit(self, *args, **kwargs):
        if threading.current_thread().name != LEASE_WATCHDOG:
            counter.step()
        return real_commit(self, *args, **kwargs)

    psycopg.Connection.commit = counted_commit  # type: ignore[method-assign]


async def _new_then_send(job: dict, counter: _Counter) -> object:
    """session/new, then its first prompt (issue 23: the session's first write)."""
    from agent_host.service import SessionService

    from ..service.test_handles import Port

    service = SessionService(
        Port(), store=job["store"], model=job["model"], approval="auto", roots=[job["workspace"]]
    )
    if isinstance(service.store, SqliteCheckpointer):
        service.store._conn = _CountedConnection(service.store._conn, counter)
    session_id = await service.new(title=job["title"])
    _install(counter)  # (new wrote nothing: the prompt is the first durable step)
    await service.send(session_id, job["prompt"])
    await service.shutdown()
    return session_id


async def _run(job: dict, counter: _Counter) -> object:
    if job["op"] == "new_then_send":
        return await _new_then_send(job, counter)
    host = AgentHost(
        store=job["store"],
        workdir=job["workspace"],
        auto_compact=None,
        model=job.get("model", "openai/gpt-4.1-mini"),
        session_id=job.get("session"),
    )
    if isinstance(host.store, SqliteCheckpointer):
        host.store._conn = _CountedConnection(host.store._conn, counter)  # see the class
    if job["store"].startswith("postgresql:"):
        _count_postgres(counter)
    _install(counter)
    if job["op"] == "restore":
        result = await host.restore(job["session"], job["seq"])
    elif job["op"] == "fork":
        result = await host.fork(job["session"])
    elif job["op"] == "undo":
        result = await host.undo_restore(job["session"])
    else:
        result = await host.send(job["prompt"])
    await host.close()
    return result


def _summary(result: object) -> object:
    """What the parent checks of an operation's result (a fork: the new id)."""
    if isinstance(result, str):
        return result
    if hasattr(result, "stop_reason"):  # a turn
        return {"stop_reason": result.stop_reason}
    return {"restored": len(result.restored_files), "conflicts": result.conflicts}


def _child(job: dict) -> None:
    counter = _Counter(job["kill_at"], job.get("kill_when_present"))
    try:
        result = asyncio.run(_run(job, counter))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, then exit
        with open(job["report"], "w") as f:
            json.dump({"error": f"{type(exc).__name__}: {exc}"}, f)
        os._exit(1)
    with open(job["report"], "w") as f:
        json.dump({"steps": counter.steps, "result": _summary(result)}, f)
    os._exit(0)


PR_SET_CHILD_SUBREAPER = 36
LEFT_RUNNING_BOUND = 60.0
"""Seconds the processes a killed child left may take to end (see _reap_orphans)."""


def _become_subreaper() -> None:
    """Have the processes a killed child leaves -- a command it was starting, its
    process watchdog -- reparented to this process (Linux), so _reap_orphans can
    wait for them."""
    import ctypes

    with suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_orphans() -> list[int]:
    """Wait until every process the job's child started has ended; the pids of any
    still running after LEFT_RUNNING_BOUND (then killed).

    A child killed while it forks a command leaves the fork holding the child's
    files -- its session's lease lock among them -- until it execs: the next
    operation would find the session's turn still running. And a command the kill
    left (its watchdog ends it) could change a file after the caller has looked.
    The job is over when they are all gone."""
    deadline = time.monotonic() + LEFT_RUNNING_BOUND
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return []
        if pid:
            continue
        if time.monotonic() > deadline:
            left = [
                int(stat.parent.name)
                for stat in Path("/proc").glob("[0-9]*/stat")
                if _parent_of(stat) == os.getpid()
            ]
            for orphan in left:
                with suppress(ProcessLookupError):
                    os.kill(orphan, signal.SIGKILL)
            return left
        time.sleep(0.01)


def _parent_of(stat: Path) -> int | None:
    try:
        return int(stat.read_text().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def main() -> None:
    _become_subreaper()
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(job)
        _, status = os.waitpid(pid, 0)
        left_running = _reap_orphans()
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        report = {}
        if not killed and os.path.exists(job["report"]):
            with open(job["report"]) as f:
                report = json.load(f)
        if left_running:
            report["left_running"] = left_running
        print(json.dumps({"killed": killed, "pid": pid, **report}), flush=True)


if __name__ == "__main__":
    main()
