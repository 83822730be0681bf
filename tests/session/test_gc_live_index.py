"""gc beside a live workspace index: the blobs the index holds for files no event
has touched yet are the content a later command overwrites, and must stay."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from agent_host.session.blobs import MemoryBlobStore
from agent_host.session.capture import WorkspaceIndex
from agent_host.session.host import AgentHost

from ..conftest import make_backend
from .test_command_capture import command
from .test_host import script

AGE = 2 * 3600
ROOT = Path(__file__).resolve().parents[2]


def age_blobs(url: str, tmp_path: Path) -> None:
    """Every stored blob last touched ``AGE`` seconds ago, as if stored then."""
    then = time.time() - AGE
    if url.startswith("file:"):
        for path in (tmp_path / "store" / "blobs").rglob("*"):
            if path.is_file():
                os.utime(path, (then, then))
    elif url.startswith("sqlite:"):
        with sqlite3.connect(tmp_path / "store.db") as db:
            db.execute("UPDATE blobs SET touched_at = ?", (then,))
    else:
        import psycopg

        parts = urlsplit(url)
        schema = parse_qs(parts.query)["schema"][0]
        with psycopg.connect(parts._replace(query="").geturl(), autocommit=True) as conn:
            conn.execute(f'UPDATE "{schema}".blobs SET touched_at = %s', (then,))


def gc_in_another_process(url: str) -> str:
    """``agent-host gc`` with its default grace period, as an operator runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "agent_host", "gc", "--store", url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", ["file", "sqlite", "postgres"])
async def test_gc_spares_what_the_live_index_holds(tmp_path, request, name):
    backend = make_backend(name, tmp_path, request)
    ws = tmp_path / "ws"
    ws.mkdir()
    keep = ws / "keep.txt"
    keep.write_bytes(b"the user's words, never touched by the agent\n")
    old = time.time() - 3 * 24 * 3600
    os.utime(keep, (old, old))
    steps = [
        command("ls"),
        {"text": "listed"},
        command("echo clobbered > keep.txt"),
        {"text": "clobbered"},
    ]
    host = AgentHost(
        store=backend.open(), model=script(tmp_path, steps), workdir=ws, auto_compact=None
    )
    try:
        await host.send("list the files")  # the index is built: every file's blob stored
        await host.store.blobs.put(b"garbage no event and no index holds")
        age_blobs(backend.url, tmp_path)
        said = gc_in_another_process(backend.url)
        assert said.startswith("removed 1 snapshots"), said
        second = await host.send("clobber keep.txt")
        assert keep.read_text() == "clobbered\n"
        result = await host.restore(host.session_id, second.checkpoint)
        assert result.restored_files == ["keep.txt"]
        assert keep.read_bytes() == b"the user's words, never touched by the agent\n"
    finally:
        await host.close()
        await backend.close_all()


async def test_an_index_whose_pins_lapsed_reads_again_what_gc_took(tmp_path):
    """PostgreSQL's pins expire; a holder idle that long must not trust its blobs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("first\n")
    old = time.time() - 3600
    os.utime(ws / "keep.txt", (old, old))  # not racy: its stat alone says it is known
    blobs = _Lapsing()
    index = WorkspaceIndex([ws], blobs)
    try:
        await index.refresh()
        blobs.lapse()
        await blobs.gc(set(), grace_seconds=-1)  # what a gc takes once the pins lapsed
        await index.refresh()
        (ws / "keep.txt").write_text("second\n")
        (change,) = (await index.changes()).changes
        assert await blobs.get(change.before) == b"first\n"
    finally:
        await index.close()


class _Lapsing(MemoryBlobStore):
    """A memory blob store whose pins can be made to lapse, as expired ones do."""

    def lapse(self) -> None:
        self._pins = type(self._pins)()


async def test_postgres_pins_that_expired_are_renewed_and_checked(tmp_path, request, monkeypatch):
    """An index idle past its pins' lifetime: gc (another process) drops them and
    takes its blobs; the next command's refresh notices, and reads the file again."""
    from agent_host.session.store import postgres_blobs

    monkeypatch.setattr(postgres_blobs, "PIN_LIFETIME", 1.0)
    backend = make_backend("postgres", tmp_path, request)
    store = backend.open()
    ws = tmp_path / "ws"
    ws.mkdir()
    keep = ws / "keep.txt"
    keep.write_text("first\n")
    old = time.time() - 3600
    os.utime(keep, (old, old))
    index = WorkspaceIndex([ws], store.blobs)
    try:
        await index.refresh()
        time.sleep(1.5)  # the pins' lifetime, with no pass to renew them
        age_blobs(backend.url, tmp_path)
        assert gc_in_another_process(backend.url).startswith("removed 1 snapshots")
        await index.refresh()
        keep.write_text("second\n")
        (change,) = (await index.changes()).changes
        assert await store.blobs.get(change.before) == b"first\n"
    finally:
        await index.close()
        await backend.close_all()
