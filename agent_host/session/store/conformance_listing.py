"""The checkpointer contract: the session list, whole and by pages, as other store
objects change it.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import pytest

from agent_host.session.events import (
    AssistantMessage,
    SessionStarted,
    UserPrompt,
)
from agent_host.session.store.conformance_backends import turn

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


# -- pages


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


async def test_a_new_store_objects_pages_are_the_kept_ones(backend):
    """What a new process's first pages read (the file store: the index's tail and
    its sorted region from the end) is what a store kept open pages, through
    writes, deletes and cursors, and what list() gives."""
    kept = backend.open()
    opened = [kept]  # closed at the end: an in-memory store gives back its one object
    try:
        for n in range(9):
            await kept.append(f"s{n}", [UserPrompt(text=f"p{n}")])
        await kept.list_page(2)
        await kept.append("s1", [AssistantMessage(text="moves s1 up")])
        await kept.delete("s7")
        await kept.append("s9", [UserPrompt(text="new")])
        everything = await kept.list()
        after = None
        for start in range(0, len(everything) + 1, 3):
            opened.append(backend.open())
            page = await opened[-1].list_page(3, after)
            assert page == await kept.list_page(3, after) == everything[start : start + 3]
            if page:
                after = (page[-1].updated_at, page[-1].id)
    finally:
        for store in opened:
            await store.close()
