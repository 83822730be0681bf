"""The store suite runs on every shared backend (tests/conftest.py), on SQLite's
in-memory database, which no other suite needs (it is the SQLite code on no file),
and on the SQLAlchemy store over aiosqlite (file and memory), asyncpg and aiomysql
(MariaDB or MySQL)."""

from __future__ import annotations

import pytest

from ...conftest import BACKENDS, Backend, make_backend

STORE_BACKENDS = [
    *BACKENDS,
    "sqlite-memory",
    "sqla-sqlite",
    "sqla-sqlite-memory",
    "sqla-postgres",
    "sqla-mysql",
]


@pytest.fixture(params=STORE_BACKENDS)
def backend(request, tmp_path) -> Backend:
    return make_backend(request.param, tmp_path, request)
