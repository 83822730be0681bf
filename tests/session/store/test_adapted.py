"""LiteAgent's checkpointer contract -- an object of six methods (append, read,
head, list, delete, truncate) -- as a store: the shared conformance checks run
against the adapter unchanged, and an object lacking a method is told exactly
which and what each must do."""

from __future__ import annotations

import pytest

from agent_host.service.errors import ErrorKind, describe
from agent_host.session.errors import CheckpointConflictError, IncompleteStore, SessionNotFound
from agent_host.session.events import UserPrompt
from agent_host.session.store.adapted import REQUIRED, AdaptedCheckpointer, adapt, as_checkpointer
from agent_host.session.store.conformance import *  # noqa: F403 - the checks
from agent_host.session.store.conformance import Backend


class DictCheckpointer:
    """Exactly LiteAgent's contract over a dict, async as LiteAgent's methods are:
    no blobs, no leases, no truncations kept, no paging, no url."""

    def __init__(self) -> None:
        self.logs: dict[str, list] = {}

    async def append(self, session_id, events, expected_head=None):
        log = self.logs.get(session_id, [])
        head = log[-1].seq if log else 0
        if expected_head is not None and expected_head != head:
            raise CheckpointConflictError(session_id, expected_head, head)
        self.logs[session_id] = log + list(events)
        return self.logs[session_id][-1].seq if self.logs[session_id] else 0

    async def read(self, session_id, since_seq=0):
        return [e for e in self.logs.get(session_id, []) if e.seq > since_seq]

    async def head(self, session_id):
        log = self.logs.get(session_id)
        return log[-1].seq if log else 0

    async def list(self):
        return list(self.logs)  # ids: the adapter folds each row from the log

    async def delete(self, session_id):
        if self.logs.pop(session_id, None) is None:
            raise SessionNotFound(session_id)

    async def truncate(self, session_id, seq, expected_head=None):
        log = self.logs.get(session_id, [])
        head = log[-1].seq if log else 0
        if expected_head is not None and expected_head != head:
            raise CheckpointConflictError(session_id, expected_head, head)
        self.logs[session_id] = [e for e in log if e.seq <= seq]


class SyncDictCheckpointer(DictCheckpointer):
    """The same contract in plain (blocking) methods: the adapter takes either."""

    def append(self, *args, **kwargs):  # type: ignore[override]
        return _run(super().append(*args, **kwargs))

    def read(self, *args, **kwargs):  # type: ignore[override]
        return _run(super().read(*args, **kwargs))

    def head(self, *args, **kwargs):  # type: ignore[override]
        return _run(super().head(*args, **kwargs))

    def list(self):  # type: ignore[override]
        return _run(super().list())

    def delete(self, *args, **kwargs):  # type: ignore[override]
        return _run(super().delete(*args, **kwargs))

    def truncate(self, *args, **kwargs):  # type: ignore[override]
        return _run(super().truncate(*args, **kwargs))


def _run(coroutine):
    """A coroutine that never awaits, run to its end without a loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the dict store awaited something")


@pytest.fixture(params=["async", "sync"])
def backend(request, tmp_path) -> Backend:
    # One object stands for the store: "opening" it again is asking for its adapter
    # again, as a second AgentHost over the object does. url None: it lives in this
    # process, so the checks of leases held by another process skip (the adapter's
    # leases are in-process, which the docs say).
    obj = DictCheckpointer() if request.param == "async" else SyncDictCheckpointer()
    return Backend(f"adapted-{request.param}", None, lambda: as_checkpointer(obj))


def test_one_object_gets_one_adapter_and_a_whole_store_is_used_as_it_is():
    obj = DictCheckpointer()
    adapted = as_checkpointer(obj)
    assert isinstance(adapted, AdaptedCheckpointer)
    assert as_checkpointer(obj) is adapted  # its blobs, leases and truncations shared
    assert as_checkpointer(adapted) is adapted
    assert adapted.url == "memory:"


async def test_blobs_go_to_the_folder_the_caller_names(tmp_path):
    adapted = adapt(DictCheckpointer(), blobs=tmp_path / "blobs")
    blob = await adapted.blobs.put(b"file contents")
    assert (tmp_path / "blobs" / blob[:2] / blob[2:]).read_bytes() == b"file contents"


async def test_a_writer_that_names_no_head_is_retried_past_a_conflict():
    obj = DictCheckpointer()
    adapted = as_checkpointer(obj)
    real_append = obj.append
    raced = []

    async def racing_append(session_id, events, expected_head=None):
        if not raced:  # another writer lands between the adapter's head and append
            raced.append(await real_append(session_id, [UserPrompt(seq=1, ts=1.0, text="x")]))
        return await real_append(session_id, events, expected_head=expected_head)

    obj.append = racing_append  # type: ignore[method-assign]
    assert await adapted.append("s1", [UserPrompt(text="mine")]) == 2
    assert [(e.seq, e.text) for e in await adapted.read("s1")] == [(1, "x"), (2, "mine")]
    with pytest.raises(CheckpointConflictError):
        await adapted.append("s1", [UserPrompt(text="stale")], expected_head=1)


class OnlyAppendAndRead:
    async def append(self, session_id, events, expected_head=None):
        return 0

    async def read(self, session_id, since_seq=0):
        return []

    head = "not a method"


def test_an_object_missing_methods_is_told_which_and_what_each_must_do():
    with pytest.raises(IncompleteStore) as caught:
        as_checkpointer(OnlyAppendAndRead())
    error = caught.value
    assert error.missing == ["head", "list", "delete", "truncate"]
    message = str(error)
    assert "OnlyAppendAndRead is not a usable store: it has no head, list, delete, truncate" in (
        message
    )
    for name in error.missing:
        assert REQUIRED[name] in message
    assert REQUIRED["append"] not in message  # only what is missing
    assert describe(error).kind == ErrorKind.INVALID_PARAMS
