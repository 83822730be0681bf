"""The session-id part of the checkpointer contract (conformance re-exports it).

Any string of 1-512 characters, at most 1024 bytes in UTF-8, with no NUL and no
unpaired surrogate is a session id (store/ids.py); every backend keeps it exactly:
what ``list()`` returns is the id given, byte for byte, and two ids that differ in
any way (case, Unicode normalisation, a dot) are two sessions.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from __future__ import annotations

import unicodedata

import pytest

from agent_host.session import InvalidSessionId
from agent_host.session.errors import TurnInProgress
from agent_host.session.events import AssistantMessage, UserPrompt
from agent_host.session.store.ids import MAX_ID_BYTES, MAX_ID_CHARS

_CAFE = "café-ü"
ODD_IDS = [
    "user:123@example.com",
    "https://example.com/chats/42?tab=1#x",
    "a.b.c",
    ".",
    "..",
    "../escape",
    "/abs/path",
    "a\\b",
    "sp ace\ttab\nline",
    "~x~0",
    "CON",  # a reserved device name on Windows
    "Mixed.Case",
    "mixed.case",  # a case pair: one file on a case-insensitive disk if not derived
    unicodedata.normalize("NFC", _CAFE),
    unicodedata.normalize("NFD", _CAFE),  # the same text, another normalisation
    "会话-😀",
    "x" * MAX_ID_CHARS,  # the longest in characters
    "é" * (MAX_ID_BYTES // 2),  # 512 characters, 1024 bytes: the longest in bytes
    "😀" * (MAX_ID_BYTES // 4),  # 256 characters, 1024 bytes
    "A" * 128,  # the longest plain id, named as before
    "A" * 129,  # one past it: a derived name
]

BAD_IDS = [
    "",
    "a\x00b",
    "x" * (MAX_ID_CHARS + 1),
    "😀" * (MAX_ID_BYTES // 4) + "a",  # 257 characters but 1025 bytes
    "lone \ud800 surrogate",
    None,
    7,
    b"bytes",
]


def test_the_odd_ids_are_all_different():
    assert len(set(ODD_IDS)) == len(ODD_IDS)
    assert ODD_IDS[13] != ODD_IDS[14]


async def test_any_string_is_a_session_id_kept_exactly(store, backend):
    for n, sid in enumerate(ODD_IDS):
        assert await store.append(sid, [UserPrompt(text=f"p{n}")]) == 1
    for n, sid in enumerate(ODD_IDS):
        await store.append(sid, [AssistantMessage(text=f"a{n}")], expected_head=1)
    again = backend.open()
    for n, sid in enumerate(ODD_IDS):
        events = await again.read(sid)
        assert [e.text for e in events] == [f"p{n}", f"a{n}"], sid
        assert await again.head(sid) == 2
    listed = [i.id for i in await again.list()]
    assert sorted(listed) == sorted(ODD_IDS)  # exact: no folding, no normalising
    assert {i.head for i in await again.list()} == {2}


async def test_odd_ids_truncate_delete_and_page(store, backend):
    for n, sid in enumerate(ODD_IDS):
        await store.append(sid, [UserPrompt(text=f"p{n}"), AssistantMessage(text=f"a{n}")])
    case_pair = ("Mixed.Case", "mixed.case")
    cut = await store.truncate(case_pair[0], 1)
    assert [e.text for e in cut.events] == [f"a{ODD_IDS.index(case_pair[0])}"]
    assert await store.head(case_pair[1]) == 2  # its twin is untouched
    assert await store.truncations(case_pair[1]) == []
    assert len(await backend.open().truncations(case_pair[0])) == 1
    await store.delete("..")
    await store.delete(ODD_IDS[14])  # the NFD twin
    assert await backend.open().head(ODD_IDS[13]) == 2
    assert await backend.open().read("..") == []
    seen, after = [], None
    while page := await store.list_page(4, after):
        seen += [i.id for i in page]
        after = (page[-1].updated_at, page[-1].id)
    expected = [s for s in ODD_IDS if s not in ("..", ODD_IDS[14])]
    assert sorted(seen) == sorted(expected) and len(seen) == len(expected)
    for sid in expected:  # a deleted id comes back as a new session
        await store.delete(sid)
    assert await backend.open().list() == []
    await store.append("..", [UserPrompt(text="again")])
    assert [i.id for i in await backend.open().list()] == [".."]


async def test_turn_leases_of_odd_ids_are_per_id(store):
    async with store.turn_lease("Mixed.Case"):
        with pytest.raises(TurnInProgress):
            async with store.turn_lease("Mixed.Case"):
                pass
        async with store.turn_lease("mixed.case"):
            pass
        async with store.turn_lease("x" * MAX_ID_CHARS):
            pass


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
async def test_invalid_session_ids_are_refused_before_touching_the_store(store, bad):
    for call in (
        lambda: store.append(bad, [UserPrompt(text="x")]),
        lambda: store.read(bad),
        lambda: store.head(bad),
        lambda: store.delete(bad),
        lambda: store.truncate(bad, 0),
        lambda: store.truncations(bad),
    ):
        with pytest.raises(InvalidSessionId, match="a session id is 1-512 characters") as caught:
            await call()
        assert isinstance(caught.value, ValueError)
    assert await store.list() == []
