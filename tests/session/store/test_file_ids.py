"""The file store names a session's files after its id without trusting it
(store/ids.py): plain ids keep the names every older store has, any other id
gets a derived name, and the exact id survives a rebuilt index."""

from __future__ import annotations

import os
import unicodedata

from agent_host.session import open_store
from agent_host.session.events import UserPrompt
from agent_host.session.store.ids import file_stem

ODD = [
    "user:123@example.com",
    "..",
    "a/b",
    "Mixed.Case",
    "mixed.case",
    unicodedata.normalize("NFC", "café"),
    unicodedata.normalize("NFD", "café"),
    "é" * 512,
]


def _names(root) -> list[str]:
    return sorted(os.listdir(root / "sessions"))


async def test_plain_ids_keep_their_names_and_others_are_derived(tmp_path):
    store = open_store(tmp_path.as_uri())
    await store.append("Az09-_", [UserPrompt(text="x")])
    for sid in ODD:
        await store.append(sid, [UserPrompt(text=sid)])
    async with store.turn_lease("a/b"):
        pass
    await store.close()
    names = _names(tmp_path)
    assert "Az09-_.jsonl" in names  # as every release before named it
    derived = [n for n in names if n.startswith("~")]
    assert len(derived) == 2 * len(ODD)  # a log and its id file each
    for folder in ("sessions", "locks"):
        for name in os.listdir(tmp_path / folder):
            # Nothing of the id reaches a path but a lowercase slug: no separators,
            # no dot-only names, no case pairs, short of NAME_MAX.
            assert name == name.lower() or name.startswith("Az09"), name
            assert len(name.encode()) <= 100 and "/" not in name and name.count(".") == 1
    assert len({n.lower() for n in names}) == len(names)
    stem = file_stem("user:123@example.com")
    assert stem.startswith("~user_123_example_com~")
    assert (tmp_path / "sessions" / f"{stem}.id").read_bytes() == b"user:123@example.com"


async def test_a_rebuilt_index_gives_back_the_exact_ids(tmp_path):
    store = open_store(tmp_path.as_uri())
    for sid in [*ODD, "plain"]:
        await store.append(sid, [UserPrompt(text=sid)])
    await store.close()
    (tmp_path / "index.jsonl").unlink()
    again = open_store(tmp_path.as_uri())
    assert sorted(i.id for i in await again.list()) == sorted([*ODD, "plain"])
    await again.delete("a/b")
    assert not (tmp_path / "sessions" / f"{file_stem('a/b')}.id").exists()
    (tmp_path / "index.jsonl").unlink()
    assert "a/b" not in {i.id for i in await again.list()}
    await again.close()


async def test_a_log_whose_id_file_is_lost_is_left_out_not_misnamed(tmp_path, caplog):
    store = open_store(tmp_path.as_uri())
    await store.append("x@y", [UserPrompt(text="1")])
    await store.append("kept", [UserPrompt(text="2")])
    await store.close()
    (tmp_path / "sessions" / f"{file_stem('x@y')}.id").write_bytes(b"someone-else")
    (tmp_path / "index.jsonl").unlink()
    again = open_store(tmp_path.as_uri())
    assert [i.id for i in await again.list()] == ["kept"]
    assert "names another session" in caplog.text
    assert [e.text for e in await again.read("x@y")] == ["1"]  # reading by id still works
    await again.close()
