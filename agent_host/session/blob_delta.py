"""Successive versions of one path kept as deltas, chosen at gc time.

gc already reads every new FileSnapshot event; each names a path's content before a
change and after it. The stores that pack (file, SQLite) are handed those
``(before, after)`` pairs and store ``after`` as a delta of ``before`` (see
blob_codec's delta form) when that is smaller than how ``after`` is stored now.

The direction is forward -- the newer version a delta of the older -- so that a
blob's base, once chosen, never changes: packing touches only blobs gc has not seen
before, a packed blob is never rewritten while it is kept, and a chain only ever
grows at its new end. (Git's reverse deltas keep the newest whole, which suits a
history read mostly at its tip, but then the previous tip must be rewritten every
time one is added.) The price is that the newest version is the deepest, so chains
are cut at :data:`MAX_DEPTH`: a version whose base is already that deep is left
whole and begins a new chain. At 16, reading the deepest 4 KB version costs 16
zstd decompressions (about 1 ms here) and a 1 MB one about 35 ms, while the
storage study of issue 27 (100 versions of each file) keeps 6 whole versions a file
in place of 100 (bench/bench_store_p12.py).

A delta needs its base for as long as it is kept: gc keeps the bases of every blob
it keeps (:func:`close_over_bases`), transitively, whether or not any event still
refers to them (so a deleted session's versions that a kept one was packed against
stay until that one goes too). A version is made a delta only while no other
version is a delta of it: then no chain can lead back to it (a file edited and put
back as it was makes no loop), and no chain through it can grow past the cap. Reads
still stop at :data:`READ_DEPTH_CAP` hops so that a damaged store cannot loop.
Reads resolve a chain from its whole end and check every link's content against
its id, so a missing or damaged base is a :class:`BlobCorrupt` naming the blob and
the base, never wrong content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from . import blob_codec
from .errors import BlobCorrupt, BlobNotFound

MAX_DEPTH = 16
"""The most deltas between a version gc packs and the whole version its chain
starts from."""

READ_DEPTH_CAP = 64
"""A chain longer than this when read is taken as damage (gc never makes one)."""

_CACHE_BYTES = 64 << 20
"""Contents kept while packing, so a chain of versions is decoded once, not once per
link (the pairs of one session arrive in order)."""


def read_content(blob: str, stored_of: Callable[[str], bytes | None], where: object) -> bytes:
    """The content of ``blob``: its stored bytes (``stored_of``: None if absent) in any
    form, a delta resolved through its bases. BlobNotFound if ``blob`` is not stored;
    BlobCorrupt if it or a base it needs is damaged or missing."""
    stored = stored_of(blob)
    if stored is None:
        raise BlobNotFound(f"blob {blob} is not in the blob store")
    links: list[tuple[str, bytes]] = []
    current = blob
    while (base := blob_codec.delta_base(current, stored)) is not None:
        links.append((current, stored))
        if len(links) > READ_DEPTH_CAP:
            raise BlobCorrupt(
                f"blob {blob} in {where} is damaged: its chain of deltas is longer "
                f"than {READ_DEPTH_CAP} (a loop?)"
            )
        found = stored_of(base)
        if found is None:
            raise BlobCorrupt(
                f"blob {blob} in {where} is damaged: it is stored as a delta of blob "
                f"{base}, which is missing"
            )
        current, stored = base, found
    content = blob_codec.decode(current, stored)
    for link, delta in reversed(links):
        if content is None:
            break
        content, current = blob_codec.apply_delta(link, delta, content), link
    if content is None:
        via = "" if current == blob else f", through blob {current} its content depends on"
        raise BlobCorrupt(
            f"blob {blob} in {where} is damaged: its bytes no longer match its sha256{via}"
        )
    return content


def check_all(
    stored_of: Callable[[str], bytes | None], blobs: Iterable[str], keep_bytes: int, where: object
) -> tuple[dict[str, bytes], dict[str, str]]:
    """BlobStore.read_checked over ``stored_of`` (a blob's stored bytes, None if
    absent), for the stores that read on one thread."""
    kept: dict[str, bytes] = {}
    bad: dict[str, str] = {}
    check_into(stored_of, dict.fromkeys(blobs), keep_bytes, where, kept, bad)
    return kept, bad


def check_into(
    stored_of: Callable[[str], bytes | None],
    blobs: Iterable[str],
    room: int,
    where: object,
    kept: dict[str, bytes],
    bad: dict[str, str],
) -> int:
    """:func:`check_all`'s work for one run of ``blobs``, added to ``kept`` and
    ``bad``; the room left (a store reading in chunks carries it to the next)."""
    for blob in blobs:
        try:
            data = read_content(blob, stored_of, where)
        except BlobNotFound:
            bad[blob] = "missing"
            continue
        except BlobCorrupt:
            bad[blob] = "damaged"
            continue
        if len(data) <= room:
            room -= len(data)
            kept[blob] = data
    return room


def close_over_bases(blobs: Iterable[str], bases: Mapping[str, str]) -> set[str]:
    """``blobs`` and every base their content depends on (``bases``: blob -> its
    base, for the blobs stored as deltas)."""
    closed = set(blobs)
    todo = [b for b in closed if b in bases]
    while todo:
        base = bases[todo.pop()]
        if base not in closed:
            closed.add(base)
            if base in bases:
                todo.append(base)
    return closed


def depth(blob: str, bases: Mapping[str, str], stop: str | None = None) -> int | None:
    """How many deltas lie between ``blob`` and the whole version its chain starts
    from; None if the chain passes through ``stop`` (or loops)."""
    hops = 0
    while blob in bases:
        if blob == stop or hops > READ_DEPTH_CAP:
            return None
        blob, hops = bases[blob], hops + 1
    return None if blob == stop else hops


class Packer:
    """Chooses, for each ``(before, after)`` pair in turn, whether ``after`` becomes a
    delta of ``before``, and makes the delta.

    ``stored_of``: a blob's stored bytes as the store holds them now (None if
    absent). ``bases``: blob -> base for the blobs already stored as deltas; the
    deltas this packer makes are added to it as they are made.
    """

    def __init__(
        self, stored_of: Callable[[str], bytes | None], bases: dict[str, str], where: object
    ) -> None:
        self._stored_of = stored_of
        self.bases = bases
        self._is_base = set(bases.values())
        self._where = where
        self._contents: dict[str, bytes] = {}
        self._cached = 0

    def delta(self, before: str, after: str) -> bytes | None:
        """The delta form to store ``after`` as, or None to leave it as it is: it is
        one already or the base of one, the chain would be too deep, a blob is
        unreadable, or the delta is no smaller."""
        if before == after or after in self.bases or after in self._is_base:
            return None
        chain = depth(before, self.bases, stop=after)
        if chain is None or chain >= MAX_DEPTH:
            return None
        current = self._stored_of(after)
        if current is None:
            return None
        try:
            base = self._content(before)
            content = self._content(after, current)
        except (BlobNotFound, BlobCorrupt):
            return None  # gc does not repair: a read will name the damage
        packed = blob_codec.delta_of(base, content, before)
        if len(packed) >= len(current):
            return None
        self.bases[after] = before
        self._is_base.add(before)
        return packed

    def _content(self, blob: str, stored: bytes | None = None) -> bytes:
        found = self._contents.get(blob)
        if found is not None:
            return found
        if stored is not None:
            content = read_content(blob, lambda b: stored if b == blob else None, self._where)
        else:
            content = read_content(blob, self._read, self._where)
        if self._cached + len(content) > _CACHE_BYTES:
            self._contents.clear()
            self._cached = 0
        self._contents[blob] = content
        self._cached += len(content)
        return content

    def _read(self, blob: str) -> bytes | None:
        return self._stored_of(blob)
