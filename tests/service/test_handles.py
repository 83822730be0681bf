"""Session handles, as both front ends reach them through the service: operations on
one session run one at a time in arrival order (waiting, bounded, or refused), across
processes too; an unknown session is SessionNotFound unless created; close and
delete let go of a handle."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agent_host.service import SessionService
from agent_host.session import events as ev
from agent_host.session.errors import SessionNotFound, TurnInProgress
from agent_host.session.workspace import DiskWorkspace


class Port:
    """A client that allows everything and keeps what it is told."""

    def __init__(self) -> None:
        self.workspaces: list[tuple[list[Path], str | None]] = []

    async def update(self, session_id, update) -> None:
        pass

    async def request_permission(self, request) -> str:
        return "allow_once"

    def workspace(self, roots: list[Path], session_id: str | None = None) -> DiskWorkspace:
        self.workspaces.append((roots, session_id))
        return DiskWorkspace(roots)


def script(tmp_path: Path, text: str = "ok", delay_ms: int = 0, steps: int = 20) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps({"steps": [{"text": text, "delay_ms": delay_ms}] * steps}))
    return f"scripted:{path}"


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


async def prompts(service: SessionService, session_id: str) -> list[str]:
    return [e.text for e in await service.store.read(session_id) if type(e) is ev.UserPrompt]


async def test_waiting_operations_run_one_at_a_time_in_arrival_order(service):
    sid = await service.new()
    handle = await service.handle(sid)
    async with handle.exclusive():  # an operation holds the session
        sends = []
        for n in range(3):
            sends.append(asyncio.ensure_future(service.send(sid, f"prompt {n}", wait=True)))
            await asyncio.sleep(0.01)  # they arrive in this order
        await asyncio.sleep(0.1)
        assert not any(s.done() for s in sends)  # all waiting, none refused
    done = await asyncio.wait_for(asyncio.gather(*sends), 30)
    assert [d.result.stop_reason for d in done] == ["end_turn"] * 3
    assert await prompts(service, sid) == ["prompt 0", "prompt 1", "prompt 2"]


async def test_an_operation_that_does_not_wait_is_refused_at_once(service, tmp_path):
    sid = await service.new()
    async with (await service.handle(sid)).exclusive():
        for refused in (
            service.send(sid, "now"),
            service.compact(sid),
            service.undo_restore(sid),
            service.delete(sid),
        ):
            started = time.monotonic()
            with pytest.raises(TurnInProgress, match=sid):
                await refused
            assert time.monotonic() - started < 1
    assert await prompts(service, sid) == []  # nothing reached the log
    assert await service.exists(sid)


async def test_a_bounded_wait_ends_in_turn_in_progress(service):
    sid = await service.new()
    async with (await service.handle(sid)).exclusive():
        started = time.monotonic()
        with pytest.raises(TurnInProgress, match="waited"):
            await service.send(sid, "later", wait=0.3)
        assert 0.3 <= time.monotonic() - started < 5
    # The slot it gave up is not held: the next operation runs at once.
    done = await service.send(sid, "now")
    assert done.result.stop_reason == "end_turn"
    assert await prompts(service, sid) == ["now"]


async def test_a_turn_running_makes_a_second_send_wait_or_be_refused(tmp_path, folder):
    service = SessionService(
        Port(), store="memory:", model=script(tmp_path, delay_ms=100), approval="auto",
        roots=[folder],
    )  # fmt: skip
    try:
        sid = await service.new()
        first = asyncio.ensure_future(service.send(sid, "first"))
        await asyncio.sleep(0.05)
        with pytest.raises(TurnInProgress):
            await service.send(sid, "refused")
        second = await service.send(sid, "second", wait=True)
        assert (await first).result.stop_reason == second.result.stop_reason == "end_turn"
        assert await prompts(service, sid) == ["first", "second"]
    finally:
        await service.shutdown()


async def test_an_unknown_session_is_not_found_unless_created(service):
    with pytest.raises(SessionNotFound):
        await service.handle("never-stored")
    for operation in (
        service.send("never-stored", "hi"),
        service.checkpoints("never-stored"),
        service.history("never-stored"),
        service.restore("never-stored", 1),
        service.compact("never-stored"),
        service.delete("never-stored"),
        service.close("never-stored"),
        service.fork("never-stored"),
        service.resume("never-stored"),
    ):
        with pytest.raises(SessionNotFound):
            await operation
    assert not await service.exists("never-stored")
    done = await service.send("made-here", "hi", create=True)
    assert done.result.session_id == "made-here"
    assert await prompts(service, "made-here") == ["hi"]


async def test_each_session_gets_its_own_workspace_from_the_port(service, folder):
    a, b = await service.new(), await service.new()
    await service.send(a, "hi")
    await service.send(b, "hi")
    port = service.port
    assert ([folder], a) in port.workspaces and ([folder], b) in port.workspaces
    assert (await service.handle(a)).workspace is not (await service.handle(b)).workspace


async def test_close_lets_go_of_the_handle_and_keeps_the_session(service):
    sid = await service.new()
    await service.send(sid, "one")
    before = await service.handle(sid)
    await service.close(sid)
    after = await service.handle(sid)
    assert after is not before  # opened anew
    await service.send(sid, "two")
    assert await prompts(service, sid) == ["one", "two"]


async def test_delete_waits_its_turn_and_forgets_the_session(service):
    sid = await service.new()
    handle = await service.handle(sid)
    async with handle.exclusive():
        deleting = asyncio.ensure_future(service.delete(sid, wait=True))
        await asyncio.sleep(0.1)
        assert not deleting.done()
    await asyncio.wait_for(deleting, 10)
    assert not await service.exists(sid)
    with pytest.raises(SessionNotFound):
        await service.handle(sid)


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_two_processes_waiting_for_one_sessions_lease_each_get_it_in_turn(
    tmp_path, folder, kind
):
    url = str(tmp_path / "store") if kind == "file" else f"sqlite:///{tmp_path / 'store.db'}"
    model = script(tmp_path, delay_ms=50)
    service = SessionService(Port(), store=url, model=model, approval="auto", roots=[folder])
    try:
        sid = await service.new()
        code = textwrap.dedent(
            f"""
            import asyncio, sys
            from agent_host.session.host import AgentHost
            async def main():
                async with AgentHost(store={url!r}, model={model!r}, workdir={str(folder)!r},
                                     approval="auto", auto_compact=None) as host:
                    print("ready", flush=True)
                    done = await host.send(sys.argv[1], session_id={sid!r}, wait=True)
                    print(done.stop_reason, flush=True)
            asyncio.run(main())
            """
        )
        handle = await service.handle(sid)
        async with handle.exclusive():  # this process holds the session's lease
            children = [
                subprocess.Popen(
                    [sys.executable, "-c", code, f"from child {n}"],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for n in range(2)
            ]
            for child in children:
                assert await asyncio.to_thread(child.stdout.readline) == "ready\n"
            await asyncio.sleep(0.5)
            assert all(child.poll() is None for child in children)  # waiting, not refused
        outs = [await asyncio.to_thread(child.communicate, timeout=60) for child in children]
        assert [out.strip() for out, _ in outs] == ["end_turn", "end_turn"]
        assert sorted(await prompts(service, sid)) == ["from child 0", "from child 1"]
        kinds = [type(e) for e in await service.store.read(sid)]
        turns = [k for k in kinds if k in (ev.UserPrompt, ev.TurnEnd)]
        assert turns == [ev.UserPrompt, ev.TurnEnd] * 2  # one after the other, never mixed
    finally:
        await service.shutdown()


async def test_close_during_a_turn_ends_it_cancelled_and_the_next_prompt_runs(tmp_path, folder):
    service = SessionService(
        Port(), store="memory:", model=script(tmp_path, "slow words to stream", delay_ms=200),
        approval="auto", roots=[folder],
    )  # fmt: skip
    try:
        sid = await service.new()
        running = asyncio.ensure_future(service.send(sid, "one"))
        await asyncio.sleep(0.1)
        await service.close(sid)
        done = await running
        assert done.result.stop_reason == "cancelled" and done.total_cost == 0.0
        assert (await service.send(sid, "two")).result.stop_reason == "end_turn"
        assert await prompts(service, sid) == ["one", "two"]
    finally:
        await service.shutdown()


async def test_a_service_made_to_create_unknown_sessions_opens_them_empty(tmp_path, folder):
    service = SessionService(
        Port(), store="memory:", model=script(tmp_path), approval="auto", roots=[folder],
        create_unknown=True,
    )  # fmt: skip
    try:
        assert await service.history("not-yet") == []
        assert await service.checkpoints("not-yet") == []
        assert not await service.exists("not-yet")  # reading made nothing
        with pytest.raises(SessionNotFound):
            await service.handle("not-yet", create=False)  # a caller may still insist
        await service.send("not-yet", "hi")
        assert await prompts(service, "not-yet") == ["hi"]
    finally:
        await service.shutdown()


async def test_calls_keep_their_order_when_the_store_answers_out_of_order(service, monkeypatch):
    """Each call asks the store whether the session exists before it joins the
    queue; the store answering the first call last must not let the others pass it."""
    sid = await service.new()
    asked = 0
    real_head = service.store.head

    async def head(session_id: str) -> int:
        nonlocal asked
        asked += 1
        if asked == 1:
            await asyncio.sleep(0.3)  # the first call's answer comes last
        return await real_head(session_id)

    monkeypatch.setattr(service.store, "head", head)
    sends = [asyncio.ensure_future(service.send(sid, f"prompt {n}", wait=True)) for n in range(3)]
    done = await asyncio.wait_for(asyncio.gather(*sends), 30)
    assert [d.result.stop_reason for d in done] == ["end_turn"] * 3
    assert await prompts(service, sid) == ["prompt 0", "prompt 1", "prompt 2"]
