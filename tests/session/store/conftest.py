"""The store suite runs on every shared backend (tests/conftest.py) and on SQLite's
in-memory database, which no other suite needs: it is the SQLite code on no file."""

from __future__ import annotations

import pytest

from agent_host.session import open_store

from ...conftest import BACKENDS, Backend, make_backend

STORE_BACKENDS = [*BACKENDS, "sqlite-memory"]


def make_store_backend(name: str, tmp_path) -> Backend:
    if name == "sqlite-memory":
        # Like memory: one instance stands for the store, reopening it included.
        only = open_store("sqlite:///:memory:")
        return Backend(name, None, lambda: only)
    return make_backend(name, tmp_path)


@pytest.fixture(params=STORE_BACKENDS)
def backend(request, tmp_path) -> Backend:
    return make_store_backend(request.param, tmp_path)
