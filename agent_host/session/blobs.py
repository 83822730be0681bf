"""Content-addressed storage for file snapshots.

A blob's id is the sha256 of its bytes, so the same content is stored once however
many snapshots refer to it. Writes are atomic: a blob is whole or absent. Blobs no
event refers to are removed by :func:`agent_host.session.store.collect_garbage`,
which spares any blob touched within a grace period so that a snapshot written
just before its event is never collected in between, and any blob a live holder
pinned (the workspace index's, see :mod:`.blob_pins`).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import time
from collections.abc import Callable, Collection, Iterable, Sequence, Set
from contextlib import suppress
from pathlib import Path
from typing import Protocol

import attrs

from . import blob_codec, blob_delta
from .blob_packs import Packs
from .blob_pins import FilePins
from .durable import write_atomically
from .errors import BlobCorrupt, BlobNotFound, store_unavailable

_BLOB_ID = re.compile(r"[0-9a-f]{64}")
_TEMP_PREFIX = ".tmp-"
"""Begins the name of a blob being written; gc removes old strays by it."""


def blob_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_blob_id(value: object) -> bool:
    return isinstance(value, str) and _BLOB_ID.fullmatch(value) is not None


def check_blob_id(value: str) -> str:
    if not is_blob_id(value):
        raise BlobNotFound(f"{value!r} is not a blob id (64 lowercase hex digits)")
    return value


def verified(blob: str, stored: bytes, where: object) -> bytes:
    """The content of ``blob`` from its ``stored`` bytes (see blob_codec) if it hashes
    to ``blob``; else BlobCorrupt. Every read checks, so a damaged snapshot is never
    written into a workspace as if it were the file."""
    content = blob_codec.decode(blob, stored)
    if content is None:
        raise BlobCorrupt(
            f"blob {blob} in {where} is damaged: its bytes no longer match its sha256"
        )
    return content


def check_all(
    read: Callable[[str], bytes | None],
    blobs: Iterable[str],
    keep_bytes: int,
    where: object = "the blob store",
) -> tuple[dict[str, bytes], dict[str, str]]:
    """:meth:`BlobStore.read_checked` over ``read`` (a blob's stored bytes, None if
    absent), for the stores that read on one thread; deltas resolved (blob_delta)."""
    wanted = [check_blob_id(b) for b in dict.fromkeys(blobs)]
    return blob_delta.check_all(read, wanted, keep_bytes, where)


@attrs.define
class GcResult:
    removed: int
    kept: int
    freed_bytes: int


class BlobStore(Protocol):
    async def put(self, data: bytes) -> str:
        """Store ``data`` durably; return its id. Storing known content is cheap."""
        ...

    async def get(self, blob: str) -> bytes:
        """The bytes of ``blob``: BlobNotFound if it is not stored, BlobCorrupt if
        they no longer hash to ``blob``."""
        ...

    async def put_many(self, datas: Sequence[bytes], pin: str | None = None) -> list[str]:
        """:meth:`put` for each of ``datas`` in one go (one thread hop, one
        transaction): a restore stores the current content of every file it changes.
        ``pin``: a holder to :meth:`pin` them for, in the same step."""
        ...

    async def read_checked(
        self, blobs: Iterable[str], keep_bytes: int
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        """Read each of ``blobs`` back whole: the bytes of those read (as long as
        their total stays within ``keep_bytes``; the rest must be read again when
        needed), and those that cannot be: id -> "missing" | "damaged"."""
        ...

    async def exists(self, blob: str) -> bool: ...

    async def missing(self, blobs: Collection[str]) -> set[str]:
        """Those of ``blobs`` that are not stored."""
        ...

    async def pin(self, holder: str, blobs: Collection[str]) -> bool:
        """Keep ``blobs`` (stored or touched within gc's grace period: pin what was
        just put) from gc for as long as ``holder`` (see new_holder) lives. Whether
        every earlier pin of ``holder`` still stands: False on its first pin, and when
        its pins lapsed (then pin all it relies on again, and check with
        :meth:`missing` that each is still stored: a store whose pins can lapse
        touches what it pins, so a gc under way spares it)."""
        ...

    async def release(self, holder: str) -> None:
        """Drop the pins of ``holder``."""
        ...

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        """Remove blobs not in ``referenced``, not pinned by a live holder and
        untouched for ``grace_seconds``. A store that keeps deltas also keeps every
        base a kept blob needs (see blob_delta)."""
        ...


class PackingBlobStore(BlobStore, Protocol):
    """A blob store that stores versions as deltas of one another (see blob_delta)."""

    async def gc_and_pack(
        self, referenced: Set[str], grace_seconds: float, pairs: Sequence[tuple[str, str]]
    ) -> GcResult:
        """:meth:`gc`, then each ``(before, after)`` pair's ``after`` (both kept)
        stored as a delta of ``before`` where that is smaller."""
        ...

    async def delta_bases(self, blobs: Collection[str]) -> dict[str, str]:
        """Of ``blobs``, those stored as deltas: blob -> its base."""
        ...


class FileBlobStore:
    """Blobs as files ``<root>/<first 2 hex>/<rest>`` (compressed, see blob_codec),
    written by temp file + rename; a batch of them (one capture's, one restore's) as
    one pack in ``<root>/batches`` (see blob_packs), made durable by one fsync of the
    pack and one of its folder however many blobs it holds. Pins (see blob_pins) in
    ``pins``, by default ``<root>.pins`` beside it. gc moves what it keeps of old
    batches, and packs versions as deltas, into ``<root>/packs``, holding
    ``<root>.gc.lock`` so that two collections, in any processes, never pack or
    drop at once (see file_blob_gc)."""

    writes_deltas = True

    def __init__(
        self, root: str | os.PathLike[str], pins: str | os.PathLike[str] | None = None
    ) -> None:
        self.root = Path(root)
        self._pins = FilePins(Path(pins) if pins else self.root.with_name(f"{self.root.name}.pins"))
        self._packs = Packs(self.root / "packs")
        self._batches = Packs(self.root / "batches")

    def _path(self, blob: str) -> Path:
        check_blob_id(blob)
        return self.root / blob[:2] / blob[2:]

    async def put(self, data: bytes) -> str:
        try:
            return await asyncio.to_thread(self._put, bytes(data))
        except OSError as exc:  # a full or read-only disk: typed, with where and why
            raise store_unavailable(exc.filename or self.root, "store a snapshot in", exc) from exc

    async def put_many(self, datas: Sequence[bytes], pin: str | None = None) -> list[str]:
        def put_many() -> list[str]:
            blobs = self._put_many([bytes(d) for d in datas])
            if pin is not None:
                self._pins.pin(pin, blobs)
            return blobs

        try:
            return await asyncio.to_thread(put_many)
        except OSError as exc:
            raise store_unavailable(exc.filename or self.root, "store a snapshot in", exc) from exc

    async def read_checked(
        self, blobs: Iterable[str], keep_bytes: int
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        try:
            return await asyncio.to_thread(check_all, self._stored, blobs, keep_bytes, self.root)
        except OSError as exc:
            raise store_unavailable(exc.filename or self.root, "read snapshots in", exc) from exc

    def _stored(self, blob: str) -> bytes | None:
        """The stored bytes of ``blob``: its loose file, else its entry in a pack or
        a batch (gc writes its pack before it removes a loose file or a batch)."""
        try:
            return self._path(blob).read_bytes()
        except FileNotFoundError:
            pass
        # The packs and batches known first: a blob in a batch (most are, until gc)
        # costs no listing of the gc packs' folder, nor one in a gc pack of the
        # batches' folder. Only a blob neither knows has both listed again.
        found = self._packs.stored(blob, refresh=False)
        if found is None:
            found = self._batches.stored(blob, refresh=False)
        if found is None:
            found = self._packs.stored(blob)
        return found if found is not None else self._batches.stored(blob)

    def _put(self, data: bytes) -> str:
        blob = blob_id(data)
        path = self._path(blob)
        if not self._known(path) and not self._in_batch(blob):
            stored = blob_codec.encode(data)
            for attempt in _FOLDER_ATTEMPTS:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                try:
                    write_atomically(path, stored, mode=0o600, temp_prefix=_TEMP_PREFIX)
                    break
                except FileNotFoundError:  # gc removed the folder as it emptied it
                    if attempt == _FOLDER_ATTEMPTS[-1]:
                        raise
        return blob

    @staticmethod
    def _known(path: str | Path) -> bool:
        try:
            # Known content: refresh its time so a running gc spares it.
            os.utime(path)
            return True
        except FileNotFoundError:
            return False

    def _in_batch(self, blob: str) -> bool:
        """Whether a batch this process knows holds ``blob``; if so its time is
        refreshed, as a loose file's is, so gc retires it no sooner than its grace
        period from now (see file_blob_gc)."""
        name = self._batches.pack_of(blob)
        return name is not None and self._known(os.path.join(self._batches.folder, name))

    def _put_many(self, datas: list[bytes]) -> list[str]:
        blobs = [blob_id(d) for d in datas]
        new: dict[str, bytes] = {}
        root = str(self.root)
        for blob, data in zip(blobs, datas, strict=True):
            # Paths as strings: a capture's batch is a few ms, pathlib a tenth of it.
            if blob not in new and not self._known(os.path.join(root, blob[:2], blob[2:])):
                new[blob] = data
        for blob in [b for b in new if self._in_batch(b)]:
            del new[blob]
        if len(new) <= _SYNC_EACH_MAX:
            for data in new.values():
                self._put(data)
        else:
            # Known content only gc packed is written again: a pack's time is not
            # what gc spares its entries by, and a copy is whole.
            self._batches.write({b: (blob_codec.encode(d), None) for b, d in new.items()})
        return blobs

    async def get(self, blob: str) -> bytes:
        path = self._path(blob)
        try:
            return await asyncio.to_thread(blob_delta.read_content, blob, self._stored, self.root)
        except OSError as exc:
            raise store_unavailable(exc.filename or path, "read the snapshot", exc) from exc

    def _has(self, blob: str) -> bool:
        if self._path(blob).exists():
            return True
        # What is known first, as _stored does; then both folders listed again.
        known = self._packs.has(blob, refresh=False) or self._batches.has(blob, refresh=False)
        return known or self._packs.has(blob) or self._batches.has(blob)

    async def exists(self, blob: str) -> bool:
        return await asyncio.to_thread(self._has, blob)

    async def missing(self, blobs: Collection[str]) -> set[str]:
        def missing() -> set[str]:
            # The packs listed again once after the loose files were looked for,
            # not once for each blob not found: gc writes a pack before it
            # removes the loose files and batches it packed.
            gone = {b for b in blobs if not self._path(b).exists()}
            if gone:
                self._packs.refresh()
                self._batches.refresh()
            return {
                b
                for b in gone
                if not self._packs.has(b, refresh=False) and not self._batches.has(b, refresh=False)
            }

        return await asyncio.to_thread(missing)

    async def delta_bases(self, blobs: Collection[str]) -> dict[str, str]:
        def bases() -> dict[str, str]:
            self._packs.refresh()
            known = self._packs.bases()
            return {b: known[b] for b in blobs if b in known}

        return await asyncio.to_thread(bases)

    async def pin(self, holder: str, blobs: Collection[str]) -> bool:
        # No touch needed: these pins never lapse while their holder lives, and a
        # blob is pinned just after it was stored, which touched it.
        return await asyncio.to_thread(self._pins.pin, holder, blobs)

    async def release(self, holder: str) -> None:
        await asyncio.to_thread(self._pins.release, holder)

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        return await self.gc_and_pack(referenced, grace_seconds, ())

    async def gc_and_pack(
        self, referenced: Set[str], grace_seconds: float, pairs: Sequence[tuple[str, str]]
    ) -> GcResult:
        from .file_blob_gc import collect_and_pack

        try:
            return await asyncio.to_thread(
                collect_and_pack,
                self,
                self._packs,
                self._batches,
                referenced,
                grace_seconds,
                list(pairs),
            )
        except OSError as exc:
            raise store_unavailable(exc.filename or self.root, "collect blobs in", exc) from exc

    def _gc(
        self, referenced: Set[str], grace_seconds: float, loose: set[str] | None = None
    ) -> GcResult:
        """Remove the loose files not in ``referenced`` nor pinned, untouched for
        ``grace_seconds``, and old temp files; ``loose``: filled with the blobs
        whose loose files stay."""
        removed = kept = freed = 0
        cutoff = time.time() - grace_seconds
        if not self.root.is_dir():
            return GcResult(0, 0, 0)
        # After the cutoff: a blob pinned once this has read the pins was stored or
        # touched since, and the grace period spares it.
        referenced = referenced | self._pins.live()
        for prefix in os.scandir(self.root):
            if not prefix.is_dir() or len(prefix.name) != 2:
                continue
            for entry in os.scandir(prefix.path):
                blob = prefix.name + entry.name
                if blob in referenced:
                    kept += 1  # no stat: only a blob that may go needs its time
                    if loose is not None:
                        loose.add(blob)
                    continue
                stat = entry.stat()
                stale_tmp = entry.name.startswith(_TEMP_PREFIX) and stat.st_mtime < cutoff
                if stale_tmp or (
                    is_blob_id(blob) and blob not in referenced and stat.st_mtime < cutoff
                ):
                    with suppress(FileNotFoundError):
                        os.unlink(entry.path)
                        removed += 1
                        freed += stat.st_size
                else:
                    kept += 1
                    if loose is not None and is_blob_id(blob):
                        loose.add(blob)
        return GcResult(removed, kept, freed)


_FOLDER_ATTEMPTS = (1, 2, 3)
"""Tries to create a blob's file, each after making its folder: gc removes a folder it
emptied (see file_blob_gc), and may do so between the two."""

_SYNC_EACH_MAX = 1
"""Up to this many new blobs in a put_many are each written as put writes them (an
fsync of the file and of its folder each); more go into one batch pack: one fsync of
the pack and one of its folder for the batch (the blobs of one capture or one
restore). 10 blobs of 4 KB: ~1 ms here, against ~3-7 ms by two syncfs(2) (which
also wait for whatever else is unwritten on the filesystem) and 12-78 ms by an fsync
pair each, measured side by side (bench/bench_store_p12.py prints them)."""


# The in-memory store lives in its own module; it is named here too, where every
# store is looked for. Last: that module reads this one's names.
from .memory_blobs import MemoryBlobStore as MemoryBlobStore  # noqa: E402
