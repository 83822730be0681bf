"""``agent-host run --model`` on a session started with another model: the
explicit choice wins for the turn, and the session keeps it."""

from __future__ import annotations

import json
import os

from agent_host.session import open_store
from agent_host.session.events import Usage, UserPrompt
from agent_host.session.providers.registry import PROVIDER_KEYS

from .test_cli import agent_host, common, only_session, project, script, store  # noqa: F401


def test_run_model_wins_over_the_sessions_model(tmp_path, project, store, script):  # noqa: F811
    tokens = {"input_tokens": 1, "output_tokens": 1}
    first = script([{"text": "first model", "usage": tokens}] * 4)
    other = script([{"text": "other model", "usage": tokens}] * 4)
    start = agent_host("run", "hello", *common(store, project, first))
    assert start.returncode == 0, start.stderr
    assert "first model" in start.stdout
    session = only_session(store)

    switched = agent_host("run", "switch", "--session", session, *common(store, project, other))
    assert switched.returncode == 0, switched.stderr
    assert "other model" in switched.stdout
    # With no --model the session goes on with the one it was last given.
    kept = agent_host("run", "and now", "--session", session, *common(store, project))
    assert kept.returncode == 0, kept.stderr
    assert "other model" in kept.stdout

    events = _read(store, session)
    assert [e.model for e in events if type(e) is UserPrompt] == [None, other, None]
    assert [e.model for e in events if type(e) is Usage] == [first, other, other]


def _read(url: str, session: str) -> list:
    import asyncio

    async def read():
        opened = open_store(url)
        try:
            return await opened.read(session)
        finally:
            await opened.close()

    return asyncio.run(read())


def test_history_json_is_unchanged_by_a_model_switch(tmp_path, project, store, script):  # noqa: F811
    first = script([{"text": "a"}] * 3)
    assert agent_host("run", "one", *common(store, project, first)).returncode == 0
    session = only_session(store)
    other = script([{"text": "b"}] * 3)
    assert (
        agent_host("run", "two", "--session", session, *common(store, project, other)).returncode
        == 0
    )
    shown = agent_host("history", session, "--store", store, "--json")
    assert shown.returncode == 0, shown.stderr
    messages = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [m["content"] for m in messages] == ["one", "a", "two", "b"]


def test_run_without_the_models_key_names_the_variable(tmp_path, project, store):  # noqa: F811
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    done = agent_host("run", "hi", *common(store, project, "openai/gpt-4.1-mini"), env=env)
    assert done.returncode != 0
    assert (
        "No API key for openai/gpt-4.1-mini: set OPENAI_API_KEY in the environment "
        "agent-host starts in"
    ) in " ".join(done.stderr.split()), done.stderr
