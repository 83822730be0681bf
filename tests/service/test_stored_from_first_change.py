"""Issue 23 finding 5: a session is stored from its first change, not from
session/new. CodeCompanion opens one or two sessions per chat and ``acpx exec``
one per run; each used to leave an untitled session in every picker. Now ``new``
holds the session in memory (folder, model, title) and its first prompt, items or
fork writes its opening; listings hide sessions with no prompt, those older
versions stored too."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent_host.service import SessionService
from agent_host.session import events as ev
from agent_host.session.errors import AgentHostError, CheckpointNotFound, SessionNotFound
from agent_host.session.session_folder import session_started

from .test_handles import Port, script


@pytest.fixture
def folder(tmp_path):
    made = tmp_path / "ws"
    made.mkdir()
    return made.resolve()


@pytest.fixture
async def service(tmp_path, folder):
    made = SessionService(
        Port(), store=tmp_path / "store", model=script(tmp_path), approval="auto", roots=[folder]
    )
    yield made
    await made.shutdown()


async def test_new_stores_nothing_until_the_first_prompt(service, folder):
    sid = await service.new(model="scripted-title-model", title="Refactor")
    assert await service.store.head(sid) == 0
    assert (await service.list()).sessions == []
    assert (await service.list(cwd=folder, limit=5)).sessions == []
    # Held here: resume, load and its model work before anything is stored.
    assert (await service.resume(sid)).head == 0
    assert await service.load(sid) == []
    assert await service.model_of(sid) == "scripted-title-model"

    await service.send(sid, "hello", model=service.model)
    events = await service.store.read(sid)
    assert type(events[0]) is ev.SessionStarted
    assert (events[0].workspace, events[0].model, events[0].title) == (
        str(folder),
        "scripted-title-model",
        "Refactor",
    )
    assert type(events[1]) is ev.UserPrompt and events[1].text == "hello"
    [listed] = (await service.list()).sessions
    assert (listed.id, listed.title) == (sid, "Refactor")


async def test_an_unprompted_session_is_unknown_to_another_process(service, tmp_path, folder):
    sid = await service.new()
    other = SessionService(
        Port(), store=tmp_path / "store", model=script(tmp_path), approval="auto", roots=[folder]
    )
    try:
        with pytest.raises(SessionNotFound):
            await other.resume(sid)
        with pytest.raises(SessionNotFound):
            await other.load(sid)
    finally:
        await other.shutdown()


async def test_items_open_the_log_with_what_new_was_given(service, folder):
    sid = await service.new(title="Items")
    handle = await service.handle(sid)
    await handle.add_items([{"role": "user", "content": "hi"}])
    events = await service.store.read(sid)
    assert type(events[0]) is ev.SessionStarted and events[0].title == "Items"


async def test_empty_stored_sessions_are_hidden_and_pages_stay_whole(service, folder, tmp_path):
    """Logs of only session_started (older versions' session/new) are listed
    nowhere, and do not count toward a page."""
    prompted = []
    for i in range(7):
        empty = f"20260101-000000-{i:08x}"
        started = session_started(str(folder), "m", None)
        await service.store.append(empty, [started], expected_head=0)
        sid = await service.new(title=f"t{i}")
        await service.send(sid, f"prompt {i}")
        prompted.append(sid)
    everything = (await service.list()).sessions
    assert [i.id for i in everything] == prompted[::-1]
    walked, cursor = [], None
    while True:
        page = await service.list(cwd=folder, cursor=cursor, limit=2)
        assert len(page.sessions) == 2 or page.next_cursor is None
        walked += [i.id for i in page.sessions]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert walked == prompted[::-1]

    unprompted = await service.new(title="never prompted")  # nor shown by the CLI
    listed = subprocess.run(
        [sys.executable, "-m", "agent_host", "sessions", "--store", str(tmp_path / "store")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [line.split()[0] for line in listed.stdout.splitlines()] == prompted[::-1]
    assert unprompted not in listed.stdout


async def test_what_an_unprompted_session_takes_stores_nothing_of_it(service, folder):
    """A restore, an undo, a compaction of a session with no prompt: refused or
    nothing to do, and still nothing stored; a fork of it is a stored session with
    no prompt (listed nowhere); a delete lets go of it (then unknown)."""
    sid = await service.new(title="Empty")
    with pytest.raises(CheckpointNotFound):
        await service.restore(sid, 1)
    with pytest.raises(AgentHostError):
        await service.undo_restore(sid)
    forked = await service.fork(sid)
    assert await service.store.head(sid) == 0
    assert type((await service.store.read(forked))[0]) is ev.SessionStarted
    assert (await service.list()).sessions == []
    await service.delete(sid)
    with pytest.raises(SessionNotFound, match="never prompted"):
        await service.resume(sid)
