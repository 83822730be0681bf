"""Damaging a file blob store behind its back, wherever a blob lives: its loose
file, a batch (a put_many's pack) or a gc pack (see blob_packs)."""

from __future__ import annotations

from agent_host.session.blob_packs import Packs
from agent_host.session.blobs import FileBlobStore


def _holder(store: FileBlobStore, blob: str) -> Packs | None:
    for packs in (store._packs, store._batches):
        packs.refresh()
        if packs.has(blob, refresh=False):
            return packs
    return None


def stored_bytes(store: FileBlobStore, blob: str) -> bytes:
    """The bytes ``store`` holds for ``blob`` (as stored: compressed, or a delta)."""
    data = store._stored(blob)
    assert data is not None, f"{blob} is not stored"
    return data


def overwrite(store: FileBlobStore, blob: str, data: bytes) -> None:
    """Put ``data`` where ``blob``'s bytes are (a packed entry: of the same length)."""
    path = store._path(blob)
    if path.exists():
        path.write_bytes(data)
        return
    packs = _holder(store, blob)
    assert packs is not None, f"{blob} is not stored"
    name, offset, length, _ = packs.entries()[blob]
    assert len(data) == length, f"a packed entry of {length} bytes, not {len(data)}"
    with open(packs.folder / name, "r+b") as f:
        f.seek(offset)
        f.write(data)


def remove(store: FileBlobStore, blob: str) -> None:
    """Lose ``blob``: its loose file, and its entries in every pack or batch."""
    store._path(blob).unlink(missing_ok=True)
    while (packs := _holder(store, blob)) is not None:
        name = packs.entries()[blob][0]
        holding = {b for b, e in packs.entries().items() if e[0] == name}
        packs.rewrite({name}, holding - {blob})
