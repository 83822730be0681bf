"""The in-memory blob store: blobs in a dict, for tests and the memory checkpointer."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Sequence, Set

from .blob_pins import MemoryPins
from .blobs import GcResult, blob_id, check_all, check_blob_id, verified
from .errors import BlobNotFound


class MemoryBlobStore:
    """Blobs in a dict, as they are: it never writes deltas (nothing to save in a
    store that lives as long as its process), so gc's pairs are ignored."""

    writes_deltas = False

    def __init__(self) -> None:
        self._blobs: dict[str, tuple[bytes, float]] = {}
        self._pins = MemoryPins()

    async def put(self, data: bytes) -> str:
        blob = blob_id(data)
        self._blobs[blob] = (bytes(data), time.time())
        return blob

    async def get(self, blob: str) -> bytes:
        check_blob_id(blob)
        try:
            return verified(blob, self._blobs[blob][0], "memory")
        except KeyError:
            raise BlobNotFound(f"blob {blob} is not in the blob store") from None

    async def exists(self, blob: str) -> bool:
        return check_blob_id(blob) in self._blobs

    async def missing(self, blobs: Collection[str]) -> set[str]:
        return {b for b in blobs if b not in self._blobs}

    async def pin(self, holder: str, blobs: Collection[str]) -> bool:
        now = time.time()
        for blob in blobs:
            if blob in self._blobs:
                self._blobs[blob] = (self._blobs[blob][0], now)
        return self._pins.pin(holder, blobs)

    async def release(self, holder: str) -> None:
        self._pins.release(holder)

    async def put_many(self, datas: Sequence[bytes], pin: str | None = None) -> list[str]:
        blobs = [await self.put(data) for data in datas]
        if pin is not None:
            self._pins.pin(pin, blobs)
        return blobs

    async def read_checked(
        self, blobs: Iterable[str], keep_bytes: int
    ) -> tuple[dict[str, bytes], dict[str, str]]:
        def stored(blob: str) -> bytes | None:
            found = self._blobs.get(blob)
            return None if found is None else found[0]

        return check_all(stored, blobs, keep_bytes)

    async def delta_bases(self, blobs: Collection[str]) -> dict[str, str]:
        return {}

    async def gc_and_pack(
        self, referenced: Set[str], grace_seconds: float, pairs: Sequence[tuple[str, str]]
    ) -> GcResult:
        return await self.gc(referenced, grace_seconds)

    async def gc(self, referenced: Set[str], grace_seconds: float) -> GcResult:
        cutoff = time.time() - grace_seconds
        referenced = referenced | self._pins.live()
        dead = [b for b, (_, t) in self._blobs.items() if b not in referenced and t < cutoff]
        freed = sum(len(self._blobs[b][0]) for b in dead)
        for b in dead:
            del self._blobs[b]
        return GcResult(len(dead), len(self._blobs), freed)
