"""Fixtures shared by every test: the store backends the conformance suite runs on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import attrs
import pytest

from agent_host.session import Checkpointer, open_store

BACKENDS = ["file", "sqlite", "memory"]


@attrs.define
class Backend:
    """One store backend under test.

    ``url`` opens the same store from another process (None for memory);
    ``open()`` opens it again in this process, as a restarted server would.
    """

    name: str
    url: str | None
    open: Callable[[], Checkpointer]

    @property
    def durable(self) -> bool:
        return self.url is not None


def make_backend(name: str, tmp_path) -> Backend:
    if name == "file":
        url = (tmp_path / "store").as_uri()
    elif name == "sqlite":
        url = f"sqlite://{tmp_path / 'store.db'}"
    elif name == "memory":
        only = open_store("memory:")
        return Backend(name, None, lambda: only)
    else:
        raise ValueError(name)
    return Backend(name, url, lambda: open_store(url))


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path) -> Backend:
    return make_backend(request.param, tmp_path)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Checkpointer]:
    s = backend.open()
    yield s
    await s.close()


@pytest.fixture(autouse=True)
def _forget_secrets():
    """Each test starts with no secrets registered: one test's fake key must not
    mask another test's expected output (the registry is process-wide)."""
    from agent_host.session.redaction import SECRETS

    SECRETS.clear()
    yield
    SECRETS.clear()
