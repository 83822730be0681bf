from __future__ import annotations

import pytest

from agent_host.session import (
    FileCheckpointer,
    MemoryCheckpointer,
    SqliteCheckpointer,
    UnsupportedStore,
    default_store_url,
    open_store,
)


def test_urls_pick_backends(tmp_path):
    assert isinstance(open_store("memory:"), MemoryCheckpointer)
    assert isinstance(open_store(f"sqlite://{tmp_path}/a.db"), SqliteCheckpointer)
    assert isinstance(open_store(tmp_path / "dir"), FileCheckpointer)
    assert open_store((tmp_path / "with space").as_uri()).root == tmp_path / "with space"


@pytest.mark.parametrize(
    "url", ["postgres://db/x", "http://x/y", "file://otherhost/x", "sqlite://"]
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
