"""The PostgreSQL store's blobs: in the database, so any host restores from them.

A blob is a row in ``blobs`` (its sha256, stored size, last touch) and its stored
bytes (compressed, see session.blob_codec) in ``blob_chunks``, 1 MiB a row: a large
snapshot is written and read a chunk at a time, never as one huge value, and every
read checks the bytes against the id.
Known content is not written again: the upsert that touches its row says so.

gc stores versions as deltas of one another (see session.blob_delta): a delta's
chunks hold its delta form and ``blob_bases`` names its base, whose foreign key
makes the database itself refuse to delete a base a kept blob needs. A collection
(deletes, then deltas) is one transaction under an advisory lock, so collections on
any hosts take turns, and a blob is whole in its old form or its new one at every
instant.

A holder's pins (see session.blob_pins) are rows of ``blob_pins`` under its row in
``blob_holders``, whose expiry each pin pushes :data:`PIN_LIFETIME` on: a holder on
another host cannot be watched, so a dead one's pins lapse, and a live one that was
idle that long finds out at its next pin.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Iterable, Sequence, Set

import psycopg
from psycopg import Connection, sql

from .. import blob_codec, blob_delta
from ..blobs import GcResult, blob_id, check_blob_id
from ..errors import StoreUnavailable
from .postgres_conn import Pool, Target
from .postgres_schema import lock_key

CHUNK = 1024 * 1024
PIN_LIFETIME = 24 * 3600.0
"""Seconds a holder's pins outlive its last pin."""


class PostgresBlobStore:
    writes_deltas = True

    def __init__(self, pool: Pool, target: Target) -> None:
        self._pool = pool
        self._where = target.url
        self._renewed: dict[str, float] = {}
        """When each holder of this process last pushed its pins' expiry on."""
        self._lapsed: set[str] = set()
        """Holders whose pins a gc dropped, found out by a put_many that pinned."""

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
        # touched_at is checked again on the row deleted: a pin that touched it
        # after the list was read keeps it (the delete waits for the pin's commit).
        self._drop = q(
            "DELETE FROM {s}.blobs AS b WHERE id = ANY(%s) AND touched_at < %s "
            "AND NOT EXISTS (SELECT 1 FROM {s}.blob_pins p WHERE p.blob_id = b.id) "
            "RETURNING size"
        )
        self._renew = q("UPDATE {s}.blob_holders SET expires_at = %s WHERE holder = %s")
        self._hold = q(
            "INSERT INTO {s}.blob_holders (holder, expires_at) VALUES (%s, %s) "
            "ON CONFLICT (holder) DO UPDATE SET expires_at = EXCLUDED.expires_at"
        )
        self._pin = q(
            "INSERT INTO {s}.blob_pins (holder, blob_id) SELECT %s, unnest(%s::text[]) "
            "ON CONFLICT DO NOTHING"
        )
        self._touch_all = q("UPDATE {s}.blobs SET touched_at = %s WHERE id = ANY(%s)")
        self._release = q("DELETE FROM {s}.blob_holders WHERE holder = %s")
        self._lapse = q("DELETE FROM {s}.blob_holders WHERE expires_at < %s")
        self._pinned = q("SELECT DISTINCT blob_id FROM {s}.blob_pins")
        self._gc_lock = lock_key(target.schema, "blob gc")
        self._bases = q("SELECT id, base FROM {s}.blob_bases")
        self._bases_of = q("SELECT id, base FROM {s}.blob_bases WHERE id = ANY(%s)")
        self._unchunk = q("DELETE FROM {s}.blob_chunks WHERE blob_id = %s")
        self._resize = q("UPDATE {s}.blobs SET size = %s WHERE id = %s")
        self._based = q("INSERT INTO {s}.blob_bases (id, base) VALUES (%s, %s)")

    async def put(self, data: bytes) -> str:
        return (await self.put_many([data]))[0]

    async def put_many(self, datas: Sequence[bytes], pin: str | None = None) -> list[str]:
        items = [(blob_id(d), bytes(d)) for d in datas]
        await asyncio.to_thread(
            self._put, {blob: blob_codec.encode(d) for blob, d in dict(items).items()}, pin
        )
        return [blob for blob, _ in items]

    def _put(self, new: dict[str, bytes], pin: str | None = None) -> None:
        """Store ``new``: id -> the bytes to store (encoded)."""
        now = time.time()
        with self._pool.connection("store a snapshot in") as conn:
            if pin is not None:  # first, as a pin and gc lock the holder's row first
                self._hold_row(conn, pin, now)
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
            if pin is not None and new:
                conn.execute(self._pin, (pin, sorted(new)))
        if pin is not None:
            self._renewed[pin] = now

    async def get(self, blob: str) -> bytes:
        check_blob_id(blob)
        return await asyncio.to_thread(self._get, blob)

    def _get(self, blob: str) -> bytes:
        with self._pool.connection("read the snapshot in") as conn:
            return blob_delta.read_content(blob, lambda b: self._stored(conn, b), self._where)

    def _stored(self, conn: Connection, blob: str) -> bytes | None:
        parts: list[bytes] = []
        # A server-side cursor: a large blob arrives a chunk at a time.
        with conn.cursor(name=f"blob_{blob[:16]}") as cur:
            cur.itersize = 4
            cur.execute(self._one, (blob,))
            for (data,) in cur:
                parts.append(bytes(data))
        return b"".join(parts) if parts else None

    async def exists(self, blob: str) -> bool:
        check_blob_id(blob)
        return bool(await asyncio.to_thread(self._known_of, [blob]))

    def _known_of(self, blobs: list[str]) -> set[str]:
        with self._pool.connection("read") as conn:
            return {b for (b,) in conn.execute(self._known, (blobs,)).fetchall()}

    async def missing(self, blobs: Collection[str]) -> set[str]:
        wanted = [check_blob_id(b) for b in dict.fromkeys(blobs)]
        return set(wanted) - await asyncio.to_thread(self._known_of, wanted)

    async def pin(self, holder: str, blobs: Collection[str]) -> bool:
        return await asyncio.to_thread(self._pin_rows, holder, sorted(blobs))

    def _pin_rows(self, holder: str, blobs: list[str]) -> bool:
        now = time.time()
        lapsed = holder in self._lapsed
        if not (blobs or lapsed) and now - self._renewed.get(holder, -PIN_LIFETIME) < (
            PIN_LIFETIME / 4
        ):
            return True  # renewed lately: no gc can have dropped them yet
        with self._pool.connection("pin snapshots in") as conn:
            known = self._hold_row(conn, holder, now)
            if blobs:
                conn.execute(self._pin, (holder, blobs))
                conn.execute(self._touch_all, (now, blobs))
        self._renewed[holder] = now
        self._lapsed.discard(holder)
        return known and not lapsed

    def _hold_row(self, conn: Connection, holder: str, now: float) -> bool:
        """Push the holder's expiry on (creating its row); whether it had one. A
        holder this process had pinned for and whose row gc dropped is noted as
        lapsed, for its next pin to say so."""
        known = conn.execute(self._renew, (now + PIN_LIFETIME, holder)).rowcount == 1
        if not known:
            conn.execute(self._hold, (holder, now + PIN_LIFETIME))
            if holder in self._renewed:
                self._lapsed.add(holder)
        return known

    async def release(self, holder: str) -> None:
        def release() -> None:
            self._renewed.pop(holder, None)
            self._lapsed.discard(holder)
            with self._pool.connection("release pins in") as conn:
                conn.execute(self._release, (holder,))

        await asyncio.to_thread(release)

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
                found = {blob: b"".join(p) for blob, p in parts.items()}

                def stored(b: str, found: dict[str, bytes] = found) -> bytes | None:
                    # A base not read with the rest: alone.
                    return found[b] if b in found else self._stored(conn, b)

                room = blob_delta.check_into(stored, chunk, room, self._where, kept, bad)
        return kept, bad

    async def delta_bases(self, blobs: Collection[str]) -> dict[str, str]:
        def bases() -> dict[str, str]:
            with self._pool.connection("read") as conn:
                return dict(conn.execute(self._bases_of, (list(blobs),)).fetchall())

        return await asyncio.to_thread(bases)

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        return await self.gc_and_pack(referenced, grace_seconds, ())

    async def gc_and_pack(
        self, referenced: Set[str], grace_seconds: float, pairs: Sequence[tuple[str, str]]
    ) -> GcResult:
        def collect() -> GcResult:
            try:
                return self._gc(referenced, grace_seconds, pairs)
            except StoreUnavailable as exc:
                if not isinstance(exc.__cause__, psycopg.errors.ForeignKeyViolation):
                    raise
                # A dead delta touched (put again) between the read and the delete
                # was spared, its base not: rolled back whole at commit. Its touch
                # keeps it, and so its base, this time.
                return self._gc(referenced, grace_seconds, pairs)

        return await asyncio.to_thread(collect)

    def _gc(
        self, referenced: Set[str], grace_seconds: float, pairs: Sequence[tuple[str, str]]
    ) -> GcResult:
        now = time.time()
        cutoff = now - grace_seconds
        with self._pool.connection("collect blobs in") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._gc_lock,))
            conn.execute(self._lapse, (now,))
            pinned = {b for (b,) in conn.execute(self._pinned).fetchall()}
            rows = conn.execute(self._all).fetchall()
            bases: dict[str, str] = dict(conn.execute(self._bases).fetchall())
            # Kept: referenced, pinned or touched within the grace period, and
            # every base those need (only deltas have any to add).
            keep: Set[str] = referenced | pinned
            if bases:
                fresh_deltas = [b for b, _, t in rows if t >= cutoff and b in bases]
                keep = blob_delta.close_over_bases([*keep, *fresh_deltas], bases)
            # In id order, as put and pin lock rows: no deadlock with them.
            dead = sorted(b for b, _, t in rows if b not in keep and t < cutoff)
            sizes = (
                [n for (n,) in conn.execute(self._drop, (dead, cutoff)).fetchall()] if dead else []
            )
            gone = set(dead)
            for blob in [b for b in bases if b in gone]:
                del bases[blob]
            wanted = [(b, a) for b, a in pairs if b in keep and a in keep]
            self._pack(conn, wanted, bases)
        return GcResult(len(sizes), len(rows) - len(sizes), sum(sizes))

    def _pack(self, conn: Connection, pairs: list[tuple[str, str]], bases: dict[str, str]) -> None:
        """Store each pair's ``after`` as a delta of ``before`` where it is smaller
        (see blob_delta), in the collection's transaction."""
        packer = blob_delta.Packer(lambda b: self._stored(conn, b), bases, self._where)
        for before, after in pairs:
            delta = packer.delta(before, after)
            if delta is None:
                continue
            conn.execute(self._unchunk, (after,))
            with conn.cursor() as cur:
                cur.executemany(
                    self._chunk,
                    [
                        (after, n, delta[at : at + CHUNK])
                        for n, at in enumerate(range(0, len(delta), CHUNK))
                    ],
                )
            conn.execute(self._resize, (len(delta), after))
            conn.execute(self._based, (after, before))
