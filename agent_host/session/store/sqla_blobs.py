"""The SQLAlchemy store's blobs: the ``agent_host_blobs`` table of the same database,
compressed (see session.blob_codec).

Pins (see session.blob_pins): on an SQLite file, lock files beside it (a dead
holder's go with its process, as for the SQLite store); in memory, a set; on
PostgreSQL, where a holder may be on another host, rows of ``agent_host_blob_pins``
whose expiry each pin pushes :data:`PIN_LIFETIME` on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Iterable, Sequence, Set
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, select, update

from .. import blob_codec
from ..blob_pins import FilePins, MemoryPins
from ..blobs import GcResult, blob_id, check_all, check_blob_id, verified
from ..errors import BlobNotFound

if TYPE_CHECKING:
    from .sqla import SqlAlchemyCheckpointer

PIN_LIFETIME = 24 * 3600.0
"""Seconds a holder's pins (in the database) outlive its last pin."""
_CHUNK = 500  # ids per IN (...): under SQLite's variable limit


class SqlAlchemyBlobStore:
    writes_deltas = False
    """gc never stores versions here as deltas of one another (see session.blob_delta;
    built for the file, SQLite and PostgreSQL stores, not yet here): every blob stays
    whole, so no blob is the base of another and gc's closure over bases is empty."""

    async def delta_bases(self, blobs: Collection[str]) -> dict[str, str]:
        return {}

    def __init__(self, store: SqlAlchemyCheckpointer) -> None:
        self._store = store
        path = store.path
        self._pins: FilePins | MemoryPins | None = None
        """None: pins are rows in the database."""
        if path is not None:
            self._pins = FilePins(path.with_name(path.name + ".locks") / "pins")
        elif store._sqlite:
            self._pins = MemoryPins()

    async def put(self, data: bytes) -> str:
        (blob,) = await self.put_many([data])
        return blob

    async def put_many(self, datas: Sequence[bytes], pin: str | None = None) -> list[str]:
        rows = {blob_id(d): bytes(d) for d in datas}
        blobs = [blob_id(d) for d in datas]
        s = self._store
        await s._setup()
        if rows:
            now = time.time()
            table = s.t.blobs
            async with s._connect("store blobs in", write=True) as conn:
                await conn.execute(
                    s.upsert(table, ["id"], ["touched_at"]),
                    [
                        {"id": b, "data": blob_codec.encode(d), "touched_at": now}
                        for b, d in sorted(rows.items())
                    ],
                )
                await conn.commit()
        if pin is not None:
            await self.pin(pin, blobs)
        return blobs

    async def _stored(self, blobs: list[str]) -> dict[str, bytes]:
        s = self._store
        table = s.t.blobs
        found: dict[str, bytes] = {}
        for start in range(0, len(blobs), _CHUNK):
            chunk = blobs[start : start + _CHUNK]
            rows = await s._read_rows(
                "read blobs in", select(table.c.id, table.c.data).where(table.c.id.in_(chunk))
            )
            found.update((blob, bytes(data)) for blob, data in rows)
        return found

    async def _known(self, blobs: list[str]) -> set[str]:
        s = self._store
        table = s.t.blobs
        found: set[str] = set()
        for start in range(0, len(blobs), _CHUNK):
            chunk = blobs[start : start + _CHUNK]
            rows = await s._read_rows(
                "read blobs in", select(table.c.id).where(table.c.id.in_(chunk))
            )
            found.update(blob for (blob,) in rows)
        return found

    async def get(self, blob: str) -> bytes:
        check_blob_id(blob)
        found = await self._stored([blob])
        if blob not in found:
            raise BlobNotFound(f"blob {blob} is not in the blob store")
        return verified(blob, found[blob], self._store.where)

    async def exists(self, blob: str) -> bool:
        check_blob_id(blob)
        return bool(await self._known([blob]))

    async def missing(self, blobs: Collection[str]) -> set[str]:
        wanted = [check_blob_id(b) for b in dict.fromkeys(blobs)]
        return set(wanted) - await self._known(wanted)

    async def read_checked(
        self, blobs: Iterable[str], keep_bytes: int
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        wanted = [check_blob_id(b) for b in dict.fromkeys(blobs)]
        found = await self._stored(wanted)
        return check_all(found.get, wanted, keep_bytes)

    async def pin(self, holder: str, blobs: Collection[str]) -> bool:
        blobs = list(blobs)
        if self._pins is not None:
            return await asyncio.to_thread(self._pins.pin, holder, blobs)
        s = self._store
        await s._setup()
        pins = s.t.pins
        expires = time.time() + PIN_LIFETIME
        async with s._connect("pin blobs in", write=True) as conn:
            # The marker row first: a pin and a gc lock it in that order.
            known = (
                await conn.execute(
                    select(pins.c.holder)
                    .where(pins.c.holder == holder, pins.c.blob_id == "")
                    .with_for_update()
                )
            ).first() is not None
            rows = [{"holder": holder, "blob_id": b, "expires_at": expires} for b in ["", *blobs]]
            await conn.execute(s.upsert(pins, ["holder", "blob_id"], ["expires_at"]), rows)
            await conn.execute(
                update(pins).where(pins.c.holder == holder).values(expires_at=expires)
            )
            await conn.commit()
        return known

    async def release(self, holder: str) -> None:
        if self._pins is not None:
            await asyncio.to_thread(self._pins.release, holder)
            return
        s = self._store
        await s._setup()
        async with s._connect("release pins in", write=True) as conn:
            await conn.execute(delete(s.t.pins).where(s.t.pins.c.holder == holder))
            await conn.commit()

    async def _live(self) -> set[str]:
        if self._pins is not None:
            return await asyncio.to_thread(self._pins.live)
        pins = self._store.t.pins
        rows = await self._store._read_rows(
            "read pins in",
            select(pins.c.blob_id).where(pins.c.expires_at >= time.time()).distinct(),
        )
        return {b for (b,) in rows if b}

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        s = self._store
        await s._setup()
        cutoff = time.time() - grace_seconds
        # After the cutoff: a blob pinned once this has read the pins was stored or
        # touched since, and the grace period spares it.
        referenced = referenced | await self._live()
        table = s.t.blobs
        async with s._connect("collect garbage in", write=True) as conn:
            if self._pins is None:
                await conn.execute(delete(s.t.pins).where(s.t.pins.c.expires_at < time.time()))
            rows = (
                await conn.execute(
                    select(table.c.id, table.c.touched_at, func.length(table.c.data))
                )
            ).all()
            dead = [(b, n) for b, t, n in rows if b not in referenced and t < cutoff]
            ids = [b for b, _ in dead]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                await conn.execute(
                    delete(table).where(table.c.id.in_(chunk), table.c.touched_at < cutoff)
                )
            await conn.commit()
        return GcResult(len(dead), len(rows) - len(dead), sum(size for _, size in dead))
