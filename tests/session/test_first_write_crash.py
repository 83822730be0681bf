"""Issue 23: session/new stores nothing; the session's first prompt writes its
opening (folder, model, title) and the prompt in one append. Killed before any
one durable step of that first turn, a new process finds either no session (the
prompt never landed: the client had no answer) or one whose log opens whole --
never a prompt without its opening, nor an opening without the prompt (a
session listed nowhere, as the empty ones were)."""

from __future__ import annotations

import json
import shutil

import pytest

from agent_host.service import SessionService
from agent_host.session import events as ev

from ..service.test_handles import Port
from .test_restore_crash import crasher, fast_tmp, store_url  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_new_session_s_first_prompt_killed_at_every_durable_step(
    backend,
    fast_tmp,  # noqa: F811
    crasher,  # noqa: F811
):
    ws = fast_tmp / "ws"
    ws.mkdir()
    script = fast_tmp / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "hello back"}]}))
    seen = {"nothing": 0, "whole": 0}
    k = 1
    while True:
        base = fast_tmp / f"run-{k}"
        base.mkdir()
        url = store_url(backend, base)
        outcome = crasher.run(
            op="new_then_send",
            title="First change",
            prompt="hello",
            model=f"scripted:{script}",
            store=url,
            workspace=str(ws),
            kill_at=k,
            report=str(fast_tmp / "report.json"),
        )
        assert "error" not in outcome, f"the turn failed on its own: {outcome['error']}"
        checker = SessionService(Port(), store=url, model=f"scripted:{script}", roots=[ws])
        try:
            stored = await checker.store.list()
            listed = (await checker.list()).sessions
            if not stored:
                assert listed == [], k
                seen["nothing"] += 1
            else:
                [info] = stored
                events = await checker.store.read(info.id)
                assert type(events[0]) is ev.SessionStarted, (k, events)
                assert events[0].title == "First change", k
                assert type(events[1]) is ev.UserPrompt and events[1].text == "hello", k
                assert [i.id for i in listed] == [info.id], k
                seen["whole"] += 1
        finally:
            await checker.shutdown()
        shutil.rmtree(base)
        if not outcome["killed"]:
            assert outcome["result"] == info.id
            break
        k += 1
    # both outcomes happened: the kill landed before and after the first append
    assert seen["nothing"] and seen["whole"], seen
