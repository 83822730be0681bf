"""The PostgreSQL store's blobs: in the database, so any host restores from them.

A blob is a row in ``blobs`` (its sha256, size, last touch) and its bytes in
``blob_chunks``, 1 MiB a row: a large snapshot is written and read a chunk at a
time, never as one huge value, and every read checks the bytes against the id.
Known content is not written again: the upsert that touches its row says so.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterable, Sequence, Set

from psycopg import sql

from ..blobs import GcResult, blob_id, check_blob_id, verified
from ..errors import BlobCorrupt, BlobNotFound
from .postgres_conn import Pool, Target

CHUNK = 1024 * 1024


class PostgresBlobStore:
    def __init__(self, pool: Pool, target: Target) -> None:
        self._pool = pool
        self._where = target.url

        def q(text: str) -> sql.Composed:
            return sql.SQL(text).format(s=sql.Identifier(target.schema))

        # xmax = 0 only on a row this statement inserted: new content.
        self._touch = q(
            "INSERT INTO {s}.blobs AS b (id, size, touched_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET touched_at = EXCLUDED.touched_at "
            "RETURNING (xmax = 0)"
        )
        self._chunk = q("INSERT INTO {s}.blob_chunks (blob_id, n, data) VALUES (%s, %s, %s)")
        self._chunks = q(
            "SELECT blob_id, data FROM {s}.blob_chunks WHERE blob_id = ANY(%s) ORDER BY blob_id, n"
        )
        self._one = q("SELECT data FROM {s}.blob_chunks WHERE blob_id = %s ORDER BY n")
        self._known = q("SELECT id FROM {s}.blobs WHERE id = ANY(%s)")
        self._all = q("SELECT id, size, touched_at FROM {s}.blobs")
        self._drop = q("DELETE FROM {s}.blobs WHERE id = ANY(%s)")

    async def put(self, data: bytes) -> str:
        return (await self.put_many([data]))[0]

    async def put_many(self, datas: Sequence[bytes]) -> list[str]:
        items = [(blob_id(d), bytes(d)) for d in datas]
        await asyncio.to_thread(self._put, dict(items))
        return [blob for blob, _ in items]

    def _put(self, new: dict[str, bytes]) -> None:
        now = time.time()
        with self._pool.connection("store a snapshot in") as conn:
            # In id order: two hosts storing the same blobs lock their rows alike.
            for blob in sorted(new):
                data = new[blob]
                (inserted,) = conn.execute(self._touch, (blob, len(data), now)).fetchone()  # type: ignore[misc]
                if inserted:
                    with conn.cursor() as cur:
                        cur.executemany(
                            self._chunk,
                            [
                                (blob, n, data[at : at + CHUNK])
                                for n, at in enumerate(range(0, max(len(data), 1), CHUNK))
                            ],
                        )

    async def get(self, blob: str) -> bytes:
        check_blob_id(blob)
        return await asyncio.to_thread(self._get, blob)

    def _get(self, blob: str) -> bytes:
        digest = hashlib.sha256()
        parts: list[bytes] = []
        with self._pool.connection("read the snapshot in") as conn:
            # A server-side cursor: a large blob arrives a chunk at a time.
            with conn.cursor(name=f"blob_{blob[:16]}") as cur:
                cur.itersize = 4
                cur.execute(self._one, (blob,))
                for (data,) in cur:
                    digest.update(data)
                    parts.append(bytes(data))
        if not parts:
            raise BlobNotFound(f"blob {blob} is not in the blob store")
        if digest.hexdigest() != blob:
            raise BlobCorrupt(
                f"blob {blob} in {self._where} is damaged: its bytes no longer match its sha256"
            )
        return b"".join(parts)

    async def exists(self, blob: str) -> bool:
        check_blob_id(blob)
        return bool(await asyncio.to_thread(self._known_of, [blob]))

    def _known_of(self, blobs: list[str]) -> set[str]:
        with self._pool.connection("read") as conn:
            return {b for (b,) in conn.execute(self._known, (blobs,)).fetchall()}

    async def read_checked(
        self, blobs: Iterable[str], keep_bytes: int
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        wanted = [check_blob_id(b) for b in dict.fromkeys(blobs)]
        return await asyncio.to_thread(self._read_checked, wanted, keep_bytes)

    def _read_checked(
        self, wanted: list[str], keep_bytes: int
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        kept: dict[str, bytes] = {}
        bad: dict[str, str] = {}
        room = keep_bytes
        with self._pool.connection("read snapshots in") as conn:
            for start in range(0, len(wanted), 200):
                chunk = wanted[start : start + 200]
                parts: dict[str, list[bytes]] = {}
                with conn.cursor(name="blobs_checked") as cur:
                    cur.itersize = 16
                    cur.execute(self._chunks, (chunk,))
                    for blob, data in cur:
                        parts.setdefault(blob, []).append(bytes(data))
                for blob in chunk:
                    if blob not in parts:
                        bad[blob] = "missing"
                        continue
                    data = b"".join(parts.pop(blob))
                    try:
                        verified(blob, data, self._where)
                    except BlobCorrupt:
                        bad[blob] = "damaged"
                        continue
                    if len(data) <= room:
                        room -= len(data)
                        kept[blob] = data
        return kept, bad

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        return await asyncio.to_thread(self._gc, referenced, grace_seconds)

    def _gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        cutoff = time.time() - grace_seconds
        with self._pool.connection("collect blobs in") as conn:
            rows = conn.execute(self._all).fetchall()
            dead = [(b, n) for b, n, t in rows if b not in referenced and t < cutoff]
            if dead:
                conn.execute(self._drop, ([b for b, _ in dead],))
        return GcResult(len(dead), len(rows) - len(dead), sum(n for _, n in dead))
