"""Killing a restore, an undo, a fork, a turn or a new session's first prompt before each of
its durable steps, one run per step.

Run as a process (``python -m tests.session.crash_points``) that reads one JSON
job per line on stdin and answers one JSON line per job on stdout. Each job is
run in a child forked from this process, so the imports are paid once. The child
counts its durable steps -- every fsync, fdatasync, rename, replace and unlink,
every syncfs of a batch of blobs,
every pwrite (how the file store writes its log: a killed process loses nothing
it wrote, only a power cut loses what was not synced, so without the write a kill
could never land before an append), every SQLite commit and every PostgreSQL
statement and commit -- and SIGKILLs itself just before step ``kill_at``: a
crash at exactly that point.
A child that gets to the end reports how many steps it made (``kill_at`` 0 runs
to the end), so the caller can enumerate every point.

A job may instead name a state to crash in: ``kill_when_present``, a glob, kills
the child just before the first durable step at which a path matches it (say, a
write's temp file). Step numbers cannot: the steps of the threads a turn runs
interleave differently from run to run, and a state that lasts one step (a temp
file, between its fsync and its rename) can fall between two runs' numbers.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import signal
import sys

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


def _install(counter: _Counter) -> None:
    from agent_host.session import blobs

    for module, name in [(os, n) for n in STEPS] + [(blobs, "_sync_filesystem")]:
        real = getattr(module, name)

        def counted(*args, _real=real, **kwargs):
            counter.step()
            return _real(*args, **kwargs)

        setattr(module, name, counted)


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


def _count_postgres(counter: _Counter) -> None:
    """Every statement a PostgreSQL store sends, and every commit, is a step (the
    server, not this process, makes them durable: a kill lands between them)."""
    import psycopg

    for cls, name in (
        (psycopg.Cursor, "execute"),
        (psycopg.Cursor, "executemany"),
        (psycopg.Connection, "commit"),
    ):
        real = getattr(cls, name)

        def counted(self, *args, _real=real, **kwargs):
            counter.step()
            return _real(self, *args, **kwargs)

        setattr(cls, name, counted)


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


def main() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(job)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        report = {}
        if not killed and os.path.exists(job["report"]):
            with open(job["report"]) as f:
                report = json.load(f)
        print(json.dumps({"killed": killed, "pid": pid, **report}), flush=True)


if __name__ == "__main__":
    main()
