"""The session service: sessions of several folders side by side in one service,
each running, listing and restoring in its own folder; fork and close."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_host.service import ContextItem, SessionService
from agent_host.session.errors import SessionNotFound
from agent_host.session.workspace import DiskWorkspace


class Port:
    """A client that allows everything and keeps what it is told."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, object]] = []

    async def update(self, session_id, update) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, request) -> str:
        return "allow_once"

    def workspace(self, roots: list[Path], session_id: str | None = None) -> DiskWorkspace:
        return DiskWorkspace(roots)


def script(tmp_path, steps) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


WRITE = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "x\n"}}]},
    {"text": "wrote out.txt"},
]


@pytest.fixture
def folders(tmp_path):
    made = [tmp_path / name for name in ("one", "two", "server")]
    for folder in made:
        folder.mkdir()
    return [f.resolve() for f in made]


async def test_sessions_of_two_folders_each_work_in_their_own(tmp_path, folders):
    one, two, server = folders
    service = SessionService(
        Port(), store=tmp_path / "store", model=script(tmp_path, WRITE), approval="auto",
        roots=[server],
    )  # fmt: skip
    try:
        a = await service.new(cwd=one)
        b = await service.new(cwd=two)
        for sid in (a, b):
            done = await service.send(sid, "write it")
            assert done.result.stop_reason == "end_turn"
        assert (one / "out.txt").read_text() == (two / "out.txt").read_text() == "x\n"
        assert not (server / "out.txt").exists()
        assert [i.id for i in (await service.list(cwd=one)).sessions] == [a]
        assert {i.id for i in (await service.list()).sessions} == {a, b}

        [checkpoint] = await service.checkpoints(a)
        await service.restore(a, checkpoint.seq)
        assert not (one / "out.txt").exists() and (two / "out.txt").exists()

        fork = await service.fork(b)
        [fork_checkpoint] = await service.checkpoints(fork)
        await service.restore(fork, fork_checkpoint.seq)  # in b's folder, like its source
        assert not (two / "out.txt").exists()
    finally:
        await service.shutdown()
        await service.shutdown()  # again: waits for the first, no error


async def test_a_new_service_resumes_a_session_in_the_folder_it_is_given(tmp_path, folders):
    one, _, server = folders
    model = script(tmp_path, [*WRITE, {"text": "again"}])
    first = SessionService(Port(), store=tmp_path / "store", model=model, approval="auto",
                           roots=[server])  # fmt: skip
    sid = await first.new(cwd=one)
    await first.send(sid, "write it")
    await first.shutdown()

    second = SessionService(Port(), store=tmp_path / "store", model=model, approval="auto",
                            roots=[server])  # fmt: skip
    try:
        events = await second.load(sid, cwd=one)
        assert [type(e).__name__ for e in events][:2] == ["SessionStarted", "UserPrompt"]
        [checkpoint] = await second.checkpoints(sid)
        await second.restore(sid, checkpoint.seq)
        assert not (one / "out.txt").exists()
        with pytest.raises(SessionNotFound):
            await second.load("never-stored", cwd=one)
    finally:
        await second.shutdown()


async def test_context_reaches_the_prompt_and_close_stops_a_turn(tmp_path, folders):
    _, _, server = folders
    slow = [{"text": "slow", "delay_ms": 30_000}]
    port = Port()
    service = SessionService(port, store="memory:", model=script(tmp_path, slow), roots=[server])
    try:
        sid = await service.new()
        turn = asyncio.create_task(
            service.send(sid, "look", context=[ContextItem("print(1)", "file:///a.py")])
        )
        while not any(type(u).__name__ == "UserPrompt" for _, u in port.updates):
            await asyncio.sleep(0.01)
        await service.close(sid)
        done = await asyncio.wait_for(turn, 10)
        assert done.result.stop_reason == "cancelled"
        [prompt] = [u for _, u in port.updates if type(u).__name__ == "UserPrompt"]
        # logged apart from the prompt (titles are made of the text alone)...
        assert prompt.text == "look"
        assert prompt.context == [{"text": "print(1)", "uri": "file:///a.py"}]
        # ...and the model reads both
        [user] = [m for m in await service.history(sid) if m["role"] == "user"]
        assert user["content"] == "look\n\n<context uri='file:///a.py'>\nprint(1)\n</context>"
        [summary] = (await service.list()).sessions
        assert summary.title == "look"
        with pytest.raises(ValueError, match="limit"):
            await service.list(limit=0)
    finally:
        await service.shutdown()


async def test_a_sessions_approval_can_change(tmp_path, folders):
    _, _, server = folders
    service = SessionService(Port(), store="memory:", model=script(tmp_path, WRITE), roots=[server])
    try:
        sid = await service.new()
        assert service.approval_of(sid) == "ask"
        service.set_approval(sid, "read-only")
        done = await service.send(sid, "write it")
        assert done.result.stop_reason == "end_turn"
        assert not (server / "out.txt").exists()  # refused under read-only
        with pytest.raises(ValueError, match="approval must be one of"):
            service.set_approval(sid, "yolo")
    finally:
        await service.shutdown()


async def test_list_pages_by_key_of_one_folder_and_refuses_a_made_up_cursor(
    tmp_path, folders, monkeypatch
):
    from agent_host.service import sessions as service_module
    from agent_host.session.errors import InvalidArgument

    one, two, server = folders
    service = SessionService(Port(), store=tmp_path / "store", roots=[server])
    try:
        mine = [await _stored(service, one if n % 3 else two) for n in range(11)]
        ours = [s for n, s in enumerate(mine) if n % 3]
        everything = await service.list()
        assert {i.id for i in everything.sessions} == set(mine)
        # Pages of one folder, walked by cursor, are its sessions newest first, once.
        seen, cursor = [], None
        while True:
            page = await service.list(cwd=one, limit=2, cursor=cursor)
            assert len(page.sessions) <= 2
            seen += [i.id for i in page.sessions]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == [i.id for i in everything.sessions if i.id in ours]
        # A folder's listing with no limit reads the store in batches.
        monkeypatch.setattr(service_module, "_LIST_BATCH", 3)
        whole = await service.list(cwd=one)
        assert [i.id for i in whole.sessions] == seen and whole.next_cursor is None
        for bad in ("2", "not base64!", "WzEsMiwzXQ=="):
            with pytest.raises(InvalidArgument, match="not a nextCursor"):
                await service.list(cursor=bad, limit=2)
    finally:
        await service.shutdown()


async def _stored(service: SessionService, cwd) -> str:
    """A new session, stored: its first change (issue 23: session/new stores nothing)."""
    sid = await service.new(cwd=cwd)
    await (await service.handle(sid)).add_items([{"role": "user", "content": "hi"}])
    return sid
