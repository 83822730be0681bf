"""The SQLite store's blobs: in the same database as the events, so one file (or one
in-memory database) holds a whole store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Iterable, Sequence, Set
from typing import TYPE_CHECKING

from .. import blob_codec
from ..blob_pins import FilePins, MemoryPins
from ..blobs import GcResult, blob_id, check_all, check_blob_id, verified
from ..errors import BlobNotFound

if TYPE_CHECKING:
    from .sqlite import SqliteCheckpointer


class SqliteBlobStore:
    """Content-addressed blobs in the ``blobs`` table of the store's database
    (compressed, see blob_codec); pins
    (see blob_pins) as lock files beside it, in ``<database>.locks/pins``."""

    def __init__(self, store: SqliteCheckpointer) -> None:
        self._store = store
        path = store.path
        self._pins = (
            MemoryPins()
            if path is None
            else FilePins(path.with_name(path.name + ".locks") / "pins")
        )

    async def put(self, data: bytes) -> str:
        return (await self.put_many([data]))[0]

    async def put_many(self, datas: Sequence[bytes], pin: str | None = None) -> list[str]:
        rows = [(blob_id(d), bytes(d)) for d in datas]
        blobs = [blob for blob, _ in rows]
        rows = [(blob, blob_codec.encode(d)) for blob, d in dict(rows).items()]

        def put_many() -> None:
            self._put_rows(rows)
            if pin is not None:
                self._pins.pin(pin, blobs)

        await asyncio.to_thread(put_many)
        return blobs

    async def missing(self, blobs: Collection[str]) -> set[str]:
        wanted = [check_blob_id(b) for b in dict.fromkeys(blobs)]
        found: set[str] = set()
        for start in range(0, len(wanted), 500):  # under SQLite's variable limit
            chunk = wanted[start : start + 500]
            rows = await asyncio.to_thread(
                self._store._query,
                f"SELECT id FROM blobs WHERE id IN ({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
            found.update(blob for (blob,) in rows)
        return set(wanted) - found

    async def pin(self, holder: str, blobs: Collection[str]) -> bool:
        # No touch (a commit) needed: these pins never lapse while their holder lives.
        return await asyncio.to_thread(self._pins.pin, holder, blobs)

    async def release(self, holder: str) -> None:
        await asyncio.to_thread(self._pins.release, holder)

    async def read_checked(
        self, blobs: Iterable[str], keep_bytes: int
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        wanted = [check_blob_id(b) for b in dict.fromkeys(blobs)]
        found: dict[str, bytes] = {}
        for start in range(0, len(wanted), 500):  # under SQLite's variable limit
            chunk = wanted[start : start + 500]
            rows = await asyncio.to_thread(
                self._store._query,
                f"SELECT id, data FROM blobs WHERE id IN ({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
            found.update((blob, bytes(data)) for blob, data in rows)
        return check_all(found.get, wanted, keep_bytes)

    def _put_rows(self, rows: list[tuple[str, bytes]]) -> None:
        now = time.time()
        with self._store._transaction() as db:
            db.executemany(
                "INSERT INTO blobs (id, data, touched_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET touched_at = excluded.touched_at",
                [(blob, data, now) for blob, data in rows],
            )

    async def get(self, blob: str) -> bytes:
        check_blob_id(blob)
        rows = await asyncio.to_thread(
            self._store._query, "SELECT data FROM blobs WHERE id = ?", (blob,)
        )
        if not rows:
            raise BlobNotFound(f"blob {blob} is not in the blob store")
        return verified(blob, bytes(rows[0][0]), self._store._where)

    async def exists(self, blob: str) -> bool:
        check_blob_id(blob)
        rows = await asyncio.to_thread(
            self._store._query, "SELECT 1 FROM blobs WHERE id = ?", (blob,)
        )
        return bool(rows)

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        return await asyncio.to_thread(self._gc, referenced, grace_seconds)

    def _gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        cutoff = time.time() - grace_seconds
        # After the cutoff: a blob pinned once this has read the pins was stored or
        # touched since, and the grace period spares it.
        referenced = referenced | self._pins.live()
        with self._store._transaction() as db:
            rows = db.execute("SELECT id, touched_at, length(data) FROM blobs").fetchall()
            dead = [(b, n) for b, t, n in rows if b not in referenced and t < cutoff]
            db.executemany("DELETE FROM blobs WHERE id = ?", [(b,) for b, _ in dead])
        return GcResult(len(dead), len(rows) - len(dead), sum(size for _, size in dead))
