"""AgentHost over an object of LiteAgent's six checkpointer methods, nothing more:
turns, a new host resuming over the same object, restore and undo (file snapshots
in the adapter's default blob store), fork, listing, delete; the harness facade
and the Agents SDK session take the same object; one missing a method is refused
with the methods it lacks named."""

from __future__ import annotations

import pytest

from agent_host.harness import aagent_resume, aagent_session
from agent_host.session.errors import IncompleteStore, SessionNotFound
from agent_host.session.host import AgentHost
from agent_host.session.store.adapted import AdaptedCheckpointer

from .store.test_adapted import DictCheckpointer, OnlyAppendAndRead
from .test_host import call, files, script

TURNS = [
    {"tool_calls": [call("write_file", path="a.py", content="v1\n")]},
    {"text": "Created a.py."},
    {"tool_calls": [call("edit_file", path="a.py", old_string="v1", new_string="v2")]},
    {"text": "Edited a.py."},
    {"text": "Third."},
]


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def test_a_six_method_object_is_a_whole_store_for_agent_host(tmp_path, ws):
    obj = DictCheckpointer()
    model = script(tmp_path, TURNS)
    host = AgentHost(store=obj, model=model, workdir=ws)
    assert isinstance(host.store, AdaptedCheckpointer)
    first = await host.send("create a.py")
    await host.send("edit a.py")
    assert files(ws) == {"a.py": "v2\n"}
    assert list(obj.logs) == [host.session_id]  # the log is in the caller's object
    await host.close()  # the object is the caller's: closing the host leaves it be

    # Another host over the same object resumes the session and rewinds it: the
    # file snapshots the first host stored are in the shared default blob store.
    again = AgentHost(store=obj, model=model, workdir=ws)
    await again.resume(first.session_id)
    history = await again.history()
    assert [m["content"] for m in history if m["role"] == "user"] == [
        "create a.py",
        "edit a.py",
    ]
    checkpoints = await again.list_checkpoints()
    assert [c.prompt for c in checkpoints] == ["create a.py", "edit a.py"]
    await again.restore(first.session_id, checkpoints[1].seq)
    assert files(ws) == {"a.py": "v1\n"}
    assert len(await again.history()) < len(history)
    await again.undo_restore()
    assert files(ws) == {"a.py": "v2\n"} and await again.history() == history

    forked = await again.fork(first.session_id, checkpoints[1].seq, title="branch")
    listed = {i.id: i for i in await again.list_sessions()}
    assert set(listed) == {first.session_id, forked}
    assert listed[first.session_id].turns == 2 and listed[forked].turns == 1
    assert listed[forked].title == "branch"

    await again.delete_session(forked)
    assert forked not in obj.logs
    assert [i.id for i in await again.list_sessions()] == [first.session_id]
    with pytest.raises(SessionNotFound):
        await again.delete_session(forked)
    await again.close()


async def test_the_harness_facade_takes_the_object_and_resumes_in_it(tmp_path, ws):
    obj = DictCheckpointer()
    model = script(tmp_path, [{"text": "hello"}, {"text": "again"}])
    async with aagent_session(model=model, store=obj, workdir=ws) as session:
        assert (await session.arun("hi")).text == "hello"
        state = await session.adetach()
    # The adapter lives in this process: the State says so, and resumes given the object.
    assert state.store == "memory:"
    async with await aagent_resume(state, store=obj) as session:
        assert (await session.arun("more")).text == "again"
        assert [m["content"] for m in await session.ahistory() if m["role"] == "user"] == [
            "hi",
            "more",
        ]
    assert len(obj.logs) == 1


async def test_the_agents_sdk_session_takes_the_object_too(tmp_path, ws):
    pytest.importorskip("agents")
    from agent_host.agents import AgentHostSession

    obj = DictCheckpointer()
    session = AgentHostSession("chat", obj, workdir=ws)
    await session.add_items([{"role": "user", "content": "hi"}])
    assert await AgentHostSession("chat", obj, workdir=ws).get_items() == [
        {"role": "user", "content": "hi"}
    ]
    assert list(obj.logs) == ["chat"]


def test_an_object_missing_methods_is_refused_by_name_where_a_store_is_taken(tmp_path, ws):
    with pytest.raises(IncompleteStore, match="it has no head, list, delete, truncate"):
        AgentHost(store=OnlyAppendAndRead(), workdir=ws)


async def test_the_session_service_takes_the_object_too(tmp_path, ws):
    from agent_host.service import SessionService

    from ..service.test_sessions import Port

    obj = DictCheckpointer()
    model = script(tmp_path, [{"text": "served"}])
    service = SessionService(Port(), store=obj, model=model, approval="auto", roots=[ws])
    try:
        sid = await service.new(cwd=ws)
        assert (await service.send(sid, "hi")).result.text == "served"
        assert [i.id for i in (await service.list()).sessions] == [sid] == list(obj.logs)
    finally:
        await service.shutdown()
    with pytest.raises(IncompleteStore, match="it has no head, list, delete, truncate"):
        SessionService(Port(), store=OnlyAppendAndRead())
