"""A session knows the folder it was started in -- where its turns work and its
files belong -- from its resume snapshot's header, or, for a snapshot written
before the header said, from its log."""

from __future__ import annotations

import json

import attrs

from agent_host.session import resume_snapshot
from agent_host.session.host import AgentHost
from agent_host.session.state import SessionState
from agent_host.session.store import open_store

SID = "20250101-000000-folder"


async def test_a_resumed_session_learns_its_folder_from_the_snapshot_else_the_log(tmp_path):
    a = tmp_path / "A"
    a.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "hello"}]}))
    store_dir = str(tmp_path / "store")
    async with AgentHost(store=store_dir, model=f"scripted:{script}", workdir=a) as host:
        await host.send("start", session_id=SID)

    store = open_store(store_dir)
    try:
        snapshot = await resume_snapshot.load(store, SID, body=True)
        assert snapshot is not None and snapshot.header.workspace == str(a.resolve())
        state = SessionState(store, SID)
        await state.refresh(full=False)
        assert await state.started_in() == str(a.resolve())
        assert not state.loaded  # the header said it: the log was not read

        older = attrs.evolve(snapshot.header, workspace=None)
        head = snapshot.header.head.seq
        await store.write_snapshot(SID, head, resume_snapshot.encode(older, snapshot.fold))
        state = SessionState(store, SID)
        await state.refresh(full=False)
        assert not state.loaded
        assert await state.started_in() == str(a.resolve())
        assert state.loaded
    finally:
        await store.close()
