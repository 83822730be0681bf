"""A fork killed before any one of its durable steps (file store) leaves the fork
whole or no trace of it in the list: never a session with no events."""

from __future__ import annotations

import shutil

import pytest

from agent_host.session import open_store
from agent_host.session.fork import forked_events

from .test_restore_crash import Crasher, fast_tmp, make_template, store_url  # noqa: F401

pytestmark = pytest.mark.slow


async def test_a_fork_killed_at_every_durable_step_is_whole_or_not_listed(fast_tmp):  # noqa: F811
    template = fast_tmp / "template"
    session, _ = await make_template("file", template)
    url = store_url("file", fast_tmp / "case")
    store = open_store(store_url("file", template))
    source = await store.read(session)
    await store.close()
    expected = forked_events(source, None)
    crasher = Crasher()
    outcomes = {"left nothing": 0, "left the fork": 0}
    try:
        k = 1
        while True:
            shutil.copytree(template, fast_tmp / "case", symlinks=True)
            outcome = crasher.run(
                op="fork",
                store=url,
                workspace=str(fast_tmp / "case" / "ws"),
                session=session,
                kill_at=k,
                report=str(fast_tmp / "report.json"),
            )
            assert "error" not in outcome, f"the fork failed on its own: {outcome['error']}"
            store = open_store(url)
            try:
                listed = await store.list()
                forks = [info for info in listed if info.id != session]
                assert len(listed) - len(forks) == 1
                for info in forks:
                    assert info.created_at > 0 and info.turns == 1, (k, info)
                    events = await store.read(info.id)
                    assert len(events) == len(expected) + 1, k
                    assert [type(e) for e in events[1:]] == [type(e) for e in expected], k
                outcomes["left the fork" if forks else "left nothing"] += 1
            finally:
                await store.close()
            shutil.rmtree(fast_tmp / "case")
            (fast_tmp / "report.json").unlink(missing_ok=True)
            if not outcome["killed"]:
                assert forks and forks[0].id == outcome["result"]
                break
            k += 1
    finally:
        crasher.close()
    assert outcomes["left nothing"] >= 1 and outcomes["left the fork"] >= 1, outcomes
