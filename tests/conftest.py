"""Fixtures shared by every test: the store backends the conformance suite runs on."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent_host.session import Checkpointer
from agent_host.session.store.conformance import FACTORIES, Backend

BACKENDS = ["file", "sqlite", "memory"]


def make_backend(name: str, tmp_path) -> Backend:
    if name not in FACTORIES:
        raise ValueError(name)
    return FACTORIES[name](tmp_path)


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path) -> Backend:
    return make_backend(request.param, tmp_path)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Checkpointer]:
    s = backend.open()
    yield s
    await s.close()
