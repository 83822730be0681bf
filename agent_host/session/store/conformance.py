"""The checkpointer contract: checks any backend runs unchanged.

A backend joins with a factory, ``(tmp_path) -> Backend``; a test module imports
the checks and gives them two fixtures, ``backend`` (a :class:`Backend`) and
``store`` (``backend.open()``, closed after)::

    from agent_host.session.store.conformance import *  # noqa: F403 - the checks

    @pytest.fixture(params=["file", "sqlite", "memory"])
    def backend(request, tmp_path):
        return FACTORIES[request.param](tmp_path)

A backend that needs a server (postgres) calls :func:`server_unavailable` when it
cannot reach one: a skip on a developer's machine, a failure on CI (``CI`` or
``AGENT_HOST_REQUIRE_EDITORS=1`` set), where a skipped backend would pass unseen.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from agent_host.session import (
    CheckpointConflictError,
    CheckpointNotFound,
    SessionNotFound,
    open_store,
)
from agent_host.session.errors import TurnInProgress
from agent_host.session.events import (
    AssistantMessage,
    FileSnapshot,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnEnd,
    UnknownEvent,
    Usage,
    UserPrompt,
)
from agent_host.session.store.base import Checkpointer


@attrs.define
class Backend:
    """One store backend under test.

    ``url`` opens the same store from another process (None for the stores that
    live in one); ``open()`` opens it again in this process, as a restarted server
    would (the in-memory stores give back their one instance).
    """

    name: str
    url: str | None
    open: Callable[[], Checkpointer]
    opened: list[Checkpointer] = attrs.field(factory=list)
    """Every store ``open()`` made, for :meth:`close_all` at the test's end."""

    @property
    def durable(self) -> bool:
        return self.url is not None

    async def close_all(self) -> None:
        """Close what the test opened and left open (a server store holds connections)."""
        while self.opened:
            await self.opened.pop().close()


def by_url(name: str, url: str) -> Backend:
    def opening() -> Checkpointer:
        store = open_store(url)
        backend.opened.append(store)
        return store

    backend = Backend(name, url, opening)
    return backend


def one_instance(name: str, url: str) -> Backend:
    only = open_store(url)
    return Backend(name, None, lambda: only)


FACTORIES: dict[str, Callable[[Path], Backend]] = {
    "file": lambda tmp: by_url("file", (tmp / "store").as_uri()),
    "sqlite": lambda tmp: by_url("sqlite", f"sqlite://{tmp / 'store.db'}"),
    "memory": lambda tmp: one_instance("memory", "memory:"),
    # The SQLite code on no file: like memory, one instance stands for the store.
    "sqlite-memory": lambda tmp: one_instance("sqlite-memory", "sqlite:///:memory:"),
    # The SQLAlchemy store (pip install 'agent-host[sqlalchemy]') on aiosqlite.
    # SQLAlchemy's URLs: four slashes before an absolute path.
    "sqla-sqlite": lambda tmp: by_url("sqla-sqlite", f"sqlite+aiosqlite:///{tmp / 'store.db'}"),
    "sqla-sqlite-memory": lambda tmp: one_instance(
        "sqla-sqlite-memory", "sqlite+aiosqlite:///:memory:"
    ),
}


def required() -> bool:
    """Whether every backend's server must be there (CI)."""
    return bool(os.environ.get("CI")) or os.environ.get("AGENT_HOST_REQUIRE_EDITORS") == "1"


def server_unavailable(message: str) -> None:
    """Skip with ``message``, or fail when the environment requires every server."""
    if required():
        pytest.fail(f"{message} (CI or AGENT_HOST_REQUIRE_EDITORS=1: a server must be there)")
    pytest.skip(message)


# -- the checks


def turn(n: int) -> list:
    return [
        UserPrompt(text=f"prompt {n}"),
        ToolCall(call_id=f"c{n}", name="read_file", arguments={"path": "a.py"}),
        ToolResult(call_id=f"c{n}", output="x" * 100),
        AssistantMessage(text=f"answer {n}"),
    ]


async def test_append_assigns_gapless_seqs_and_timestamps(store):
    assert await store.append("s1", turn(1)) == 4
    assert await store.append("s1", turn(2)) == 8
    events = await store.read("s1")
    assert [e.seq for e in events] == list(range(1, 9))
    assert all(e.ts > 1_600_000_000 for e in events)
    assert [e.ts for e in events] == sorted(e.ts for e in events)
    assert [type(e) for e in events[:4]] == [UserPrompt, ToolCall, ToolResult, AssistantMessage]
    assert events[1].arguments == {"path": "a.py"}
    assert await store.head("s1") == 8


async def test_read_since_seq_returns_only_later_events(store):
    await store.append("s1", turn(1) + turn(2))
    assert [e.seq for e in await store.read("s1", since_seq=5)] == [6, 7, 8]
    assert await store.read("s1", since_seq=8) == []
    assert await store.read("s1", since_seq=100) == []
    assert [e.seq for e in await store.read("s1", since_seq=0)] == list(range(1, 9))


async def test_unknown_session_is_empty_not_an_error(store):
    assert await store.head("never") == 0
    assert await store.read("never") == []
    assert await store.list() == []


async def test_append_of_nothing_changes_nothing(store):
    assert await store.append("s1", []) == 0
    assert await store.list() == []
    await store.append("s1", turn(1))
    assert await store.append("s1", [], expected_head=4) == 4
    with pytest.raises(CheckpointConflictError):
        await store.append("s1", [], expected_head=3)


async def test_sessions_are_independent(store):
    await store.append("a", turn(1))
    await store.append("b", [UserPrompt(text="other")])
    assert await store.head("a") == 4
    assert [e.text for e in await store.read("b")] == ["other"]


async def test_events_survive_reopening_the_store(store, backend):
    await store.append("s1", turn(1))
    reopened = backend.open()
    assert [e.seq for e in await reopened.read("s1")] == [1, 2, 3, 4]
    assert await reopened.append("s1", turn(2), expected_head=4) == 8
    assert await store.head("s1") == 8


# -- atomicity and conflicts


class _Unwritable:
    """A value no encoder can write: the events module writes odd values of models
    and tools in some form (a lone surrogate escaped), but not this."""

    def __str__(self) -> str:
        raise ValueError("cannot be written")


async def test_batch_with_an_unencodable_event_writes_nothing(store):
    await store.append("s1", turn(1))
    bad = turn(2)
    bad[2] = ToolResult(call_id="c2", output=_Unwritable())
    with pytest.raises(Exception):  # noqa: B017 - whichever encoding error, nothing lands
        await store.append("s1", bad)
    assert await store.head("s1") == 4
    assert len(await store.read("s1")) == 4
    assert await store.append("s1", turn(3)) == 8


async def test_an_odd_value_from_a_model_or_tool_is_stored_not_refused(store):
    odd = turn(1)
    odd[2] = ToolResult(call_id="c1", output="\ud800 lone surrogate")
    assert await store.append("s1", odd) == 4
    assert (await store.read("s1"))[2].output == "\\ud800 lone surrogate"


async def test_batch_with_a_non_event_is_refused_whole(store):
    with pytest.raises(TypeError, match="Event"):
        await store.append("s1", [UserPrompt(text="ok"), {"type": "user_prompt"}])
    assert await store.head("s1") == 0


async def test_stale_expected_head_conflicts_and_writes_nothing(store):
    assert await store.append("s1", turn(1), expected_head=0) == 4
    with pytest.raises(CheckpointConflictError) as caught:
        await store.append("s1", turn(2), expected_head=2)
    assert caught.value.expected_head == 2
    assert caught.value.actual_head == 4
    assert "s1" in str(caught.value) and "Reload" in str(caught.value)
    assert await store.head("s1") == 4
    assert await store.append("s1", turn(2), expected_head=4) == 8


async def test_expected_head_zero_refuses_an_existing_session(store):
    await store.append("s1", turn(1))
    with pytest.raises(CheckpointConflictError):
        await store.append("s1", turn(2), expected_head=0)


async def test_expected_head_on_unknown_session_must_be_zero(store):
    with pytest.raises(CheckpointConflictError):
        await store.append("new", turn(1), expected_head=3)
    assert await store.head("new") == 0


# -- list


async def test_list_is_newest_first_with_fields(store):
    await store.append("old", [SessionStarted(), UserPrompt(text="  first\n  prompt  ")])
    await store.append("mid", turn(1))
    await store.append("new", turn(1) + turn(2))
    await store.append("old", [AssistantMessage(text="late reply")])
    infos = await store.list()
    assert [i.id for i in infos] == ["old", "new", "mid"]
    old = infos[0]
    assert old.title == "first prompt"
    assert old.turns == 1
    assert old.head == 3
    assert old.created_at < old.updated_at
    new = infos[1]
    assert (new.turns, new.head, new.title) == (2, 8, "prompt 1")


async def test_list_title_is_trimmed_and_explicit_title_wins(store):
    long = "word " * 60
    await store.append("long", [UserPrompt(text=long)])
    await store.append("named", [SessionStarted(title="Fix the parser"), UserPrompt(text="go")])
    await store.append("none", [SessionStarted(), AssistantMessage(text="hello")])
    infos = {i.id: i for i in await store.list()}
    assert len(infos["long"].title) <= 80
    assert infos["long"].title.endswith("…")
    assert infos["long"].title.startswith("word word")
    assert infos["named"].title == "Fix the parser"
    assert infos["none"].title == ""
    assert infos["none"].turns == 0


async def test_a_session_of_its_opening_alone_is_empty(store):
    """What session/list and the CLI hide (issue 23): older versions stored every
    session/new as its opening alone. The summary each store keeps must say so, in
    list and in list_page alike."""
    await store.append("opened", [SessionStarted(title="never prompted")])
    await store.append("prompted", [SessionStarted(), UserPrompt(text="go")])
    await store.append("items", [SessionStarted(), AssistantMessage(text="hello")])
    for infos in (await store.list(), await store.list_page(10, None)):
        empty = {i.id: i.empty for i in infos}
        assert empty == {"opened": True, "prompted": False, "items": False}


async def test_list_gives_the_folder_each_session_was_started_in(store, backend):
    await store.append("here", [SessionStarted(workspace="/src/app"), UserPrompt(text="a")])
    await store.append("there", [SessionStarted(workspace="/src/lib"), UserPrompt(text="b")])
    await store.append("unknown", [UserPrompt(text="c")])
    await store.append("here", [AssistantMessage(text="d")])
    for reader in (store, backend.open()):
        infos = {i.id: i.workspace for i in await reader.list()}
        assert infos == {"here": "/src/app", "there": "/src/lib", "unknown": ""}


async def test_list_is_the_same_after_reopening(store, backend):
    await store.append("a", turn(1))
    await store.append("b", turn(1) + turn(2))
    before = await store.list()
    assert await backend.open().list() == before


# -- delete


async def test_delete_removes_session_and_its_truncations(store):
    await store.append("s1", turn(1) + turn(2))
    await store.truncate("s1", 4)
    await store.append("keep", turn(1))
    await store.delete("s1")
    assert await store.head("s1") == 0
    assert await store.read("s1") == []
    assert await store.truncations("s1") == []
    assert [i.id for i in await store.list()] == ["keep"]
    assert await store.append("s1", [UserPrompt(text="again")]) == 1


async def test_delete_unknown_session_says_so(store):
    with pytest.raises(SessionNotFound, match="'ghost' not found"):
        await store.delete("ghost")


async def test_delete_is_durable(store, backend):
    await store.append("s1", turn(1))
    await store.delete("s1")
    reopened = backend.open()
    assert await reopened.list() == []
    assert await reopened.read("s1") == []


# -- truncate and undo


async def test_truncate_drops_later_events_and_keeps_them(store):
    await store.append("s1", turn(1) + turn(2) + turn(3))
    cut = await store.truncate("s1", 4)
    assert (cut.id, cut.seq) == (1, 4)
    assert [e.seq for e in cut.events] == list(range(5, 13))
    assert cut.events[0] == UserPrompt(seq=5, ts=cut.events[0].ts, text="prompt 2")
    assert await store.head("s1") == 4
    assert [e.seq for e in await store.read("s1")] == [1, 2, 3, 4]
    info = (await store.list())[0]
    assert (info.head, info.turns) == (4, 1)
    assert await store.append("s1", [UserPrompt(text="instead")]) == 5


async def test_truncations_are_kept_in_order_and_survive_reopen(store, backend):
    await store.append("s1", turn(1) + turn(2) + turn(3))
    await store.truncate("s1", 8)
    await store.append("s1", [UserPrompt(text="branch")])
    await store.truncate("s1", 4)
    cuts = await backend.open().truncations("s1")
    assert [(c.id, c.seq, len(c.events)) for c in cuts] == [(1, 8, 4), (2, 4, 5)]
    assert [e.text for e in cuts[1].events if isinstance(e, UserPrompt)] == [
        "prompt 2",
        "branch",
    ]


async def test_undo_of_a_truncation_restores_the_log_exactly(store):
    """What undo-restore does: re-append the removed events at their own seqs."""
    await store.append("s1", turn(1) + turn(2))
    original = await store.read("s1")
    cut = await store.truncate("s1", 4)
    assert await store.append("s1", cut.events, expected_head=cut.seq) == 8
    restored = await store.read("s1")
    assert [(type(e), e.seq) for e in restored] == [(type(e), e.seq) for e in original]
    assert [getattr(e, "text", None) for e in restored] == [
        getattr(e, "text", None) for e in original
    ]


async def test_truncate_to_head_or_zero(store):
    await store.append("s1", turn(1))
    same = await store.truncate("s1", 4)
    assert same.events == [] and await store.head("s1") == 4
    everything = await store.truncate("s1", 0)
    assert len(everything.events) == 4
    assert await store.head("s1") == 0
    assert await store.append("s1", [UserPrompt(text="fresh")]) == 1


async def test_truncate_refuses_bad_seqs_and_unknown_sessions(store):
    await store.append("s1", turn(1))
    for seq in (-1, 5, "2", 2.0):
        with pytest.raises(CheckpointNotFound, match="between 0 and the head"):
            await store.truncate("s1", seq)
    with pytest.raises(SessionNotFound):
        await store.truncate("ghost", 0)
    assert await store.head("s1") == 4
    assert await store.truncations("s1") == []


async def test_truncate_with_stale_head_conflicts(store):
    await store.append("s1", turn(1) + turn(2))
    with pytest.raises(CheckpointConflictError):
        await store.truncate("s1", 2, expected_head=4)
    assert await store.head("s1") == 8
    cut = await store.truncate("s1", 2, expected_head=8)
    assert len(cut.events) == 6


# -- payloads


async def test_unicode_round_trips(store):
    text = "héllo — 你好 — 🦀🚀 — \u0000 nul — \u202e rtl — \U0010ffff"
    await store.append("s1", [UserPrompt(text=text), AssistantMessage(text=text[::-1])])
    events = await store.read("s1")
    assert events[0].text == text
    assert events[1].text == text[::-1]
    assert (await store.list())[0].title.startswith("héllo")


async def test_one_megabyte_event_round_trips(store, backend):
    big = "".join(chr(0x41 + i % 26) for i in range(1024 * 1024))
    await store.append("s1", [UserPrompt(text="go"), ToolResult(call_id="c", output=big)])
    await store.append("s1", [AssistantMessage(text="after")])
    events = await backend.open().read("s1")
    assert events[1].output == big
    assert events[2].text == "after"
    assert [e.seq for e in await store.read("s1", since_seq=1)] == [2, 3]


async def test_every_event_type_round_trips(store):
    written = [
        SessionStarted(workspace="/ws", model="openai/gpt-4.1-mini", title="t"),
        UserPrompt(text="p"),
        AssistantMessage(text="a"),
        ToolCall(call_id="c", name="write_file", arguments={"path": "a.py", "n": [1, 2]}),
        ToolResult(call_id="c", output="err", is_error=True),
        FileSnapshot(path="a.py", before=None, after="ab" * 32, buffer_before="cd" * 32),
        Usage(input_tokens=10, output_tokens=5, cost=0.25, model="m"),
        TurnEnd(stop_reason="end_turn"),
    ]
    await store.append("s1", written)
    for seq, (want, got) in enumerate(zip(written, await store.read("s1"), strict=True), 1):
        assert got.seq == seq
        assert type(got) is type(want)
        want_fields = {k: v for k, v in _fields(want).items() if k not in ("seq", "ts")}
        assert {k: v for k, v in _fields(got).items() if k not in ("seq", "ts")} == want_fields


async def test_unknown_event_types_pass_through(store, backend):
    future = UnknownEvent(kind="agent_thought", data={"text": "hmm", "tokens": [1, 2]})
    await store.append("s1", [UserPrompt(text="p"), future, AssistantMessage(text="a")])
    got = (await backend.open().read("s1"))[1]
    assert isinstance(got, UnknownEvent)
    assert (got.seq, got.kind, got.data) == (2, "agent_thought", {"text": "hmm", "tokens": [1, 2]})
    cut = await store.truncate("s1", 1)
    assert isinstance(cut.events[0], UnknownEvent)
    assert cut.events[0].data == {"text": "hmm", "tokens": [1, 2]}
    (kept,) = await backend.open().truncations("s1")
    assert kept.events[0].kind == "agent_thought"


# -- session ids: conformance_ids (re-exported at the end)


def _fields(event) -> dict:
    return attrs.asdict(event)


# -- turn leases


async def test_a_turn_lease_is_exclusive_and_released(store):
    async with store.turn_lease("s1"):
        with pytest.raises(TurnInProgress, match="s1"):
            async with store.turn_lease("s1"):
                pass
        async with store.turn_lease("other"):  # per session
            pass
    async with store.turn_lease("s1"):  # released on exit
        pass


async def test_a_lease_held_by_another_process_refuses_and_dies_with_it(backend):
    if not backend.durable:
        pytest.skip(f"{backend.name} lives in one process: no other process can hold a lease")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import asyncio, sys
                from agent_host.session import open_store
                async def main():
                    async with open_store({backend.url!r}).turn_lease("s1"):
                        print("held", flush=True)
                        sys.stdin.read()
                asyncio.run(main())
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TurnInProgress, match="another process"):
            async with backend.open().turn_lease("s1"):
                pass
    finally:
        holder.kill()  # a crash, not a clean release
        holder.wait(timeout=10)
    try:
        async with backend.open().turn_lease("s1"):
            pass
    finally:
        await backend.close_all()  # a server store's connections, in this test's loop


async def test_a_waiting_taker_gets_the_lease_once_it_is_released(store: Checkpointer) -> None:
    release = asyncio.Event()
    taken: list[str] = []

    async def holder() -> None:
        async with store.turn_lease("s1"):
            taken.append("first")
            await release.wait()

    async def waiter() -> None:
        async with store.turn_lease("s1", wait=True):
            taken.append("second")

    first = asyncio.ensure_future(holder())
    while not taken:
        await asyncio.sleep(0.001)
    second = asyncio.ensure_future(waiter())
    await asyncio.sleep(0.1)
    assert taken == ["first"] and not second.done()  # waiting, not refused
    release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert taken == ["first", "second"]
    async with store.turn_lease("s1"):  # the waiter released it too
        pass


async def test_a_bounded_wait_for_a_lease_ends_in_turn_in_progress(store):
    async with store.turn_lease("s1"):
        started = time.monotonic()
        with pytest.raises(TurnInProgress, match="s1"):
            async with store.turn_lease("s1", wait=0.2):
                pass
        waited = time.monotonic() - started
        assert 0.2 <= waited < 5
        with pytest.raises(TurnInProgress):  # no wait: refused at once, as always
            async with store.turn_lease("s1", wait=False):
                pass
    async with store.turn_lease("s1", wait=0.2):  # free: taken at once
        pass
    with pytest.raises(ValueError, match="wait"):
        async with store.turn_lease("s1", wait=-1):
            pass


async def test_a_lease_held_by_another_process_is_waited_for(backend):
    if not backend.durable:
        pytest.skip(f"{backend.name} lives in one process: no other process can hold a lease")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import asyncio, sys
                from agent_host.session import open_store
                async def main():
                    async with open_store({backend.url!r}).turn_lease("s1"):
                        print("held", flush=True)
                        sys.stdin.readline()
                    print("released", flush=True)
                    sys.stdin.read()
                asyncio.run(main())
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        store = backend.open()
        waiting = asyncio.ensure_future(_hold_briefly(store, wait=True))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # waiting for the other process, not refused
        holder.stdin.write("go\n")
        holder.stdin.flush()
        await asyncio.to_thread(holder.stdout.readline)
        await asyncio.wait_for(waiting, 10)
    finally:
        holder.kill()
        holder.wait(timeout=10)
        await backend.close_all()


async def _hold_briefly(store: Checkpointer, wait: bool | float) -> None:
    async with store.turn_lease("s1", wait=wait):
        pass


async def test_list_pages_walk_every_session_once_newest_first(store):
    for n in range(7):
        await store.append(f"s{n}", [UserPrompt(text=f"p{n}")])
    await store.append("s2", [AssistantMessage(text="moves s2 to the top")])
    everything = [i.id for i in await store.list()]
    seen, after = [], None
    while True:
        page = await store.list_page(3, after)
        assert len(page) <= 3
        if not page:
            break
        seen += [i.id for i in page]
        after = (page[-1].updated_at, page[-1].id)
    assert seen == everything and everything[0] == "s2" and len(set(seen)) == 7
    with pytest.raises(ValueError, match="positive"):
        await store.list_page(0)


async def test_list_pages_follow_writes_made_through_another_store_object(backend):
    """A store object kept open (a server's) pages what another one wrote since its
    last page: new sessions, sessions moved up, deleted ones gone."""
    writer, reader = backend.open(), backend.open()
    try:
        for n in range(5):
            await writer.append(f"s{n}", [UserPrompt(text=f"p{n}")])
        assert [i.id for i in await reader.list_page(2)] == ["s4", "s3"]
        await writer.append("s1", [AssistantMessage(text="moves s1 up")])
        await writer.append("s9", [UserPrompt(text="new")])
        await writer.delete("s3")
        first = await reader.list_page(2)
        assert [i.id for i in first] == ["s9", "s1"]
        assert first[1].head == 2
        rest = await reader.list_page(10, (first[-1].updated_at, first[-1].id))
        assert [i.id for i in rest] == ["s4", "s2", "s0"]
        assert [i.id for i in await reader.list()] == ["s9", "s1", "s4", "s2", "s0"]
    finally:
        await writer.close()
        await reader.close()


async def test_list_page_continues_after_a_cursor_whose_session_moved_up(store):
    for n in range(6):
        await store.append(f"s{n}", [UserPrompt(text=f"p{n}")])
    first = await store.list_page(3)
    assert [i.id for i in first] == ["s5", "s4", "s3"]
    # The page's last session is written to: the walk down goes on where it was.
    await store.append("s3", [AssistantMessage(text="moves s3 up")])
    rest = await store.list_page(3, (first[-1].updated_at, first[-1].id))
    assert [i.id for i in rest] == ["s2", "s1", "s0"]
    assert [i.id for i in await store.list_page(1)] == ["s3"]


async def test_blobs_read_back_whatever_their_content(store):
    """Blobs are kept compressed where the store compresses (see blob_codec): what
    is read back is the content, whether it compresses, does not, is empty, or is
    itself compressed data."""
    import hashlib

    import zstandard

    text = b"".join(b"line %d of a file that compresses well\n" % i for i in range(200))
    datas = [
        text,
        os.urandom(4096),
        b"",
        b"x",
        zstandard.ZstdCompressor().compress(text),
        b"\x28\xb5\x2f\xfd not a frame at all, only its magic number" * 4,
    ]
    ids = await store.blobs.put_many(datas)
    assert ids == [hashlib.sha256(d).hexdigest() for d in datas]
    for blob, data in zip(ids, datas, strict=True):
        assert await store.blobs.get(blob) == data
    kept, bad = await store.blobs.read_checked(ids, keep_bytes=1 << 20)
    assert bad == {} and kept == dict(zip(ids, datas, strict=True))
    assert await store.blobs.put(text) == ids[0]


# The session-id checks, so every suite that imports these runs them too.
from agent_host.session.store.conformance_ids import *  # noqa: E402, F403

# The resume-snapshot checks (segments, folds, crashes between): the same.
from agent_host.session.store.conformance_snapshots import *  # noqa: E402, F403
