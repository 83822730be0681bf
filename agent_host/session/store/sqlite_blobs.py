"""The SQLite store's blobs: in the same database as the events, so one file (or one
in-memory database) holds a whole store.

gc stores versions as deltas of one another (see session.blob_delta): a delta's row
in ``blobs`` holds its delta form, and ``blob_bases`` names its base, so that gc
closes what it keeps over the bases without reading any blob's bytes. Which blobs
die is decided in one transaction that also reads ``blob_bases`` and every touch,
so a base is kept whenever a blob that needs it is kept; each batch of deltas is
one transaction (the row rewritten and its base named together), so a blob is
readable in its old form or its new one at every instant. Collections take turns
on ``<database>.locks/gc.lock`` (a lock in the process for the in-memory database):
one never makes a delta of a blob another is dropping.

A new database is created with ``auto_vacuum = INCREMENTAL`` (see sqlite), and gc
gives the pages packing freed back to the filesystem; an older database keeps them
for its next writes (a ``VACUUM`` gives them back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence, Set
from typing import TYPE_CHECKING

from .. import blob_codec, blob_delta
from ..blob_pins import FilePins, MemoryPins
from ..blobs import GcResult, blob_id, check_blob_id
from .locking import hold

if TYPE_CHECKING:
    from .sqlite import SqliteCheckpointer

log = logging.getLogger(__name__)


class SqliteBlobStore:
    """Content-addressed blobs in the ``blobs`` table of the store's database
    (compressed, see blob_codec); pins
    (see blob_pins) as lock files beside it, in ``<database>.locks/pins``."""

    writes_deltas = True
    _PACK_BATCH = 200
    """Deltas written per transaction: a writer waits for one batch, not the lot."""

    def __init__(self, store: SqliteCheckpointer) -> None:
        self._store = store
        self._collecting = threading.Lock()
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

        def stored(blob: str) -> bytes | None:  # a base not read with the rest: alone
            return found[blob] if blob in found else self._stored(blob)

        return await asyncio.to_thread(
            blob_delta.check_all, stored, wanted, keep_bytes, self._store._where
        )

    def _stored(self, blob: str) -> bytes | None:
        rows = self._store._query("SELECT data FROM blobs WHERE id = ?", (blob,))
        return bytes(rows[0][0]) if rows else None

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
        return await asyncio.to_thread(
            blob_delta.read_content, blob, self._stored, self._store._where
        )

    async def delta_bases(self, blobs: Collection[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(blobs))
        found: dict[str, str] = {}
        for start in range(0, len(wanted), 500):  # under SQLite's variable limit
            chunk = wanted[start : start + 500]
            rows = await asyncio.to_thread(
                self._store._query,
                f"SELECT id, base FROM blob_bases WHERE id IN ({','.join('?' * len(chunk))})",
                tuple(bytes.fromhex(b) for b in chunk),
            )
            found.update((blob.hex(), base.hex()) for blob, base in rows)
        return found

    async def exists(self, blob: str) -> bool:
        check_blob_id(blob)
        rows = await asyncio.to_thread(
            self._store._query, "SELECT 1 FROM blobs WHERE id = ?", (blob,)
        )
        return bool(rows)

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        return await self.gc_and_pack(referenced, grace_seconds, ())

    async def gc_and_pack(
        self, referenced: Set[str], grace_seconds: float, pairs: Sequence[tuple[str, str]]
    ) -> GcResult:
        def collect() -> GcResult:
            with self._gc_turn():
                result, bases = self._gc(referenced, grace_seconds)
                packed = self._pack(
                    [(b, a) for b, a in pairs if b in referenced and a in referenced], bases
                )
                if result.removed or packed:
                    self._give_back_pages()
                return result

        return await asyncio.to_thread(collect)

    @contextlib.contextmanager
    def _gc_turn(self) -> Iterator[None]:
        with self._collecting:
            path = self._store.path
            if path is None:
                yield
                return
            locks = path.with_name(path.name + ".locks")
            locks.mkdir(mode=0o700, parents=True, exist_ok=True)
            with hold(str(locks / "gc.lock"), timeout=3600.0):
                yield

    def _gc(self, referenced: Set[str], grace_seconds: float) -> tuple[GcResult, dict[str, str]]:
        cutoff = time.time() - grace_seconds
        # After the cutoff: a blob pinned once this has read the pins was stored or
        # touched since, and the grace period spares it.
        referenced = referenced | self._pins.live()
        with self._store._transaction() as db:
            rows = db.execute("SELECT id, touched_at, length(data) FROM blobs").fetchall()
            bases = {b.hex(): base.hex() for b, base in db.execute("SELECT * FROM blob_bases")}
            # Kept: referenced, pinned or touched within the grace period, and
            # every base those need (only deltas have any to add).
            keep: Set[str] = referenced
            if bases:
                fresh_deltas = [b for b, t, _ in rows if t >= cutoff and b in bases]
                keep = blob_delta.close_over_bases([*referenced, *fresh_deltas], bases)
            dead = [(b, n) for b, t, n in rows if b not in keep and t < cutoff]
            db.executemany("DELETE FROM blobs WHERE id = ?", [(b,) for b, _ in dead])
            gone = [b for b, _ in dead if b in bases]
            db.executemany(
                "DELETE FROM blob_bases WHERE id = ?", [(bytes.fromhex(b),) for b in gone]
            )
        for b in gone:
            del bases[b]
        result = GcResult(len(dead), len(rows) - len(dead), sum(size for _, size in dead))
        return result, bases

    def _pack(self, pairs: Sequence[tuple[str, str]], bases: dict[str, str]) -> int:
        """Store each pair's ``after`` as a delta of ``before`` where it is smaller
        and no other version's base (see blob_delta); how many were."""
        packer = blob_delta.Packer(self._stored, bases, self._store._where)
        batch: list[tuple[str, str, bytes]] = []
        packed = 0
        for before, after in pairs:
            delta = packer.delta(before, after)
            if delta is None:
                continue
            batch.append((after, before, delta))
            if len(batch) >= self._PACK_BATCH:
                packed += self._write_deltas(batch)
                batch = []
        return packed + self._write_deltas(batch)

    def _write_deltas(self, batch: list[tuple[str, str, bytes]]) -> int:
        if not batch:
            return 0
        with self._store._transaction("pack blobs in") as db:
            # Deleted and inserted anew, not updated in place: a row shrunk in place
            # leaves its page mostly empty, where new rows fill pages at the table's
            # end and the old pages empty out, for gc to give back. (Only gc deletes
            # rows, and collections take turns: each row is still there.)
            written = 0
            for blob, base, delta in batch:
                row = db.execute(
                    "DELETE FROM blobs WHERE id = ? RETURNING touched_at", (blob,)
                ).fetchone()
                if row is not None:
                    db.execute(
                        "INSERT INTO blobs (id, data, touched_at) VALUES (?, ?, ?)",
                        (blob, delta, row[0]),
                    )
                    db.execute(
                        "INSERT INTO blob_bases (id, base) VALUES (?, ?)",
                        (bytes.fromhex(blob), bytes.fromhex(base)),
                    )
                    written += 1
        return written

    def _give_back_pages(self) -> None:
        """Return the free pages to the filesystem, on a database made with
        incremental auto_vacuum (a no-op on others)."""
        store = self._store
        if store._read_only is not None:
            return
        with store._mutex:
            try:
                # Its own transaction; executescript steps the pragma to its end,
                # where execute would free one page.
                store._conn.executescript("PRAGMA incremental_vacuum")
            except sqlite3.OperationalError as exc:  # busy: the next gc does it
                log.warning("%s: free pages not given back: %s", store._where, exc)
