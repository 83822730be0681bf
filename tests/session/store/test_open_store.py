from __future__ import annotations

from urllib.parse import quote

import pytest

from agent_host.session import (
    FileCheckpointer,
    MemoryCheckpointer,
    SqliteCheckpointer,
    UnsupportedStore,
    default_store_url,
    open_store,
)
from agent_host.session.events import UserPrompt


def test_urls_pick_backends(tmp_path):
    assert isinstance(open_store("memory:"), MemoryCheckpointer)
    assert isinstance(open_store(f"sqlite://{tmp_path}/a.db"), SqliteCheckpointer)
    assert isinstance(open_store(tmp_path / "dir"), FileCheckpointer)
    assert open_store((tmp_path / "with space").as_uri()).root == tmp_path / "with space"


@pytest.mark.parametrize(
    "url", ["http://x/y", "file://otherhost/x", "sqlite://", "sqlite://host/x.db"]
)
def test_unsupported_urls_say_what_works(url):
    with pytest.raises(UnsupportedStore) as caught:
        open_store(url)
    assert isinstance(caught.value, ValueError)
    assert "sqlite:///" in str(caught.value) or "names no path" in str(caught.value)


def test_default_store_lives_in_the_user_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_url() == (tmp_path / "agent-host").as_uri()
    store = open_store()
    assert isinstance(store, FileCheckpointer)
    assert store.root == tmp_path / "agent-host"


@pytest.mark.parametrize("kind", ["file", "sqlite"])
@pytest.mark.parametrize("name", ["plain", "with space", "per%cent", "ünï"])
async def test_a_store_reopens_by_its_url(tmp_path, monkeypatch, kind, name):
    """``store.url`` is absolute, whatever it was opened by, and opens the same store."""
    monkeypatch.chdir(tmp_path)
    given = name if kind == "file" else f"sqlite://{quote(str(tmp_path / name))}.db"
    store = open_store(given)
    where = tmp_path / name if kind == "file" else tmp_path / f"{name}.db"
    assert store.url.startswith(f"{kind}:///")
    await store.append("s1", [UserPrompt(text="written through one")])
    await store.blobs.put(b"snapshot")
    reopened = open_store(store.url)
    assert type(reopened) is type(store)
    assert (reopened.root if kind == "file" else reopened.path) == where
    assert reopened.url == store.url
    assert [e.text for e in await reopened.read("s1")] == ["written through one"]
    assert await reopened.append("s1", [UserPrompt(text="and the other")], expected_head=1) == 2
    assert await store.head("s1") == 2
    await store.close()
    await reopened.close()


def test_urls_of_the_stores_that_live_in_memory():
    """They name the kind of store: opened again, each is a new, empty one."""
    assert open_store("memory:").url == "memory:"
    assert MemoryCheckpointer().url == "memory:"
    memory_sqlite = open_store("sqlite:///:memory:")
    assert memory_sqlite.url == "sqlite:///:memory:"
    assert open_store(memory_sqlite.url) is not memory_sqlite


def test_file_store_url_is_its_absolute_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert FileCheckpointer("rel").url == (tmp_path / "rel").as_uri()
    assert open_store(f"file://{tmp_path}/x").url == f"file://{tmp_path}/x"
    assert SqliteCheckpointer("rel.db").url == f"sqlite://{tmp_path}/rel.db"


def test_a_scheme_whose_library_is_missing_names_the_extra(monkeypatch):
    from agent_host.session.store import registry

    monkeypatch.setitem(
        registry._schemes, "fancydb", registry.Scheme("no_such_driver_module", "open", "fancy")
    )
    with pytest.raises(UnsupportedStore) as caught:
        open_store("fancydb://u:hunter2@host/db")
    message = str(caught.value)
    assert "pip install 'agent-host[fancy]'" in message
    assert "no_such_driver_module" in message
    assert "hunter2" not in message  # a password in the URL never reaches a message


def test_a_registered_scheme_opens_through_its_module(monkeypatch):
    from agent_host.session.store import registry

    registry.register("scratch", registry.Scheme("agent_host.session.store.memory", "open_url"))
    try:
        assert isinstance(open_store("scratch://anything"), MemoryCheckpointer)
    finally:
        registry._schemes.pop("scratch")
