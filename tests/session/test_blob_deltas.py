"""Versions packed as deltas at gc (blob_delta), on the stores that write them (file
and SQLite): a restore reads across a chain; a damaged delta or a missing base is
a typed error naming both, never wrong content; a store written before deltas
reads as it was and is packed by its next gc; two collections at once break no
chain."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from agent_host.session import collect_garbage, open_store
from agent_host.session.errors import BlobCorrupt
from agent_host.session.host import AgentHost
from agent_host.session.store.conformance_deltas import file_versions, store_versions

from . import file_blob_tamper
from .test_host import call, script


@pytest.fixture(params=["file", "sqlite"])
def url(request, tmp_path) -> str:
    return str(tmp_path / "store") if request.param == "file" else f"sqlite://{tmp_path}/s.db"


def damage_stored(store, blob: str) -> None:
    """Flip a byte at the end of ``blob``'s stored bytes, behind the store's back."""
    if hasattr(store, "_conn"):
        store._conn.execute(
            "UPDATE blobs SET data = CAST(substr(data, 1, length(data) - 1) || x'00' AS BLOB) "
            "WHERE id = ?",
            (blob,),
        )
        return
    blobs = store.blobs
    name, offset, length, _ = blobs._packs._entries[blob]
    path = blobs._packs.folder / name
    data = bytearray(path.read_bytes())
    data[offset + length - 1] ^= 0xFF
    path.write_bytes(bytes(data))


def drop_stored(store, blob: str) -> None:
    """Remove ``blob`` behind the store's back, wherever it is kept."""
    if hasattr(store, "_conn"):
        store._conn.execute("DELETE FROM blobs WHERE id = ?", (blob,))
        return
    file_blob_tamper.remove(store.blobs, blob)


async def test_a_damaged_delta_or_a_missing_base_is_a_typed_error_naming_them(url):
    store = open_store(url)
    datas = file_versions(8)
    ids = await store_versions(store, "s1", "a.py", datas)
    await collect_garbage(store, grace_seconds=0)
    bases = await store.blobs.delta_bases(ids)
    assert bases[ids[5]] == ids[4] and bases[ids[3]] == ids[2]
    damage_stored(store, ids[5])
    with pytest.raises(BlobCorrupt, match=ids[5]):
        await store.blobs.get(ids[5])
    # A later version whose chain runs through the damaged one: named with it.
    with pytest.raises(BlobCorrupt, match=f"{ids[7]}.*{ids[5]}"):
        await store.blobs.get(ids[7])
    drop_stored(store, ids[2])
    with pytest.raises(BlobCorrupt, match=f"{ids[3]}.*delta of blob {ids[2]}.*missing"):
        await store.blobs.get(ids[3])
    kept, bad = await store.blobs.read_checked(ids, keep_bytes=1 << 30)
    assert bad == {ids[2]: "missing", **{b: "damaged" for b in ids[3:]}}
    assert kept == dict(zip(ids[:2], datas[:2], strict=True))
    await store.close()


def _turns(versions: list[bytes]) -> list[dict]:
    steps: list[dict] = []
    for n, data in enumerate(versions):
        steps.append({"tool_calls": [call("write_file", path="a.py", content=data.decode())]})
        steps.append({"text": f"Wrote version {n}."})
    return steps


async def test_a_restore_reads_back_across_a_chain_of_deltas(url, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    versions = file_versions(12)
    host = AgentHost(
        store=url, model=script(tmp_path, _turns(versions)), workdir=ws, auto_compact=None
    )
    results = [await host.send(f"write version {n}") for n in range(len(versions))]
    assert (ws / "a.py").read_bytes() == versions[-1]
    await collect_garbage(host.store, grace_seconds=0)
    snapshots = [e for e in await host.store.read(host.session_id) if e.type == "file_snapshot"]
    chain = await host.store.blobs.delta_bases([e.after for e in snapshots])
    assert len(chain) >= len(versions) - 2  # the versions written are deltas now
    # A checkpoint is the moment just before its prompt: the version before it.
    await host.restore(host.session_id, results[4].checkpoint)
    assert (ws / "a.py").read_bytes() == versions[3]
    await host.restore(host.session_id, results[2].checkpoint)
    assert (ws / "a.py").read_bytes() == versions[1]
    await host.undo_restore()
    assert (ws / "a.py").read_bytes() == versions[3]
    await host.close()


async def test_a_store_written_before_deltas_reads_and_is_packed_by_its_next_gc(url, tmp_path):
    """Blobs whole, the gc cache of the version before deltas (every session
    recorded, so no log would be read), and for SQLite the schema before
    blob_bases: each reads as it was, and the next gc packs them."""
    store = open_store(url)
    datas = file_versions(10)
    ids = await store_versions(store, "s1", "a.py", datas)
    cache = store.gc_cache
    packing = store.blobs.gc_and_pack

    async def old_gc(referenced, grace_seconds, pairs):  # what the version before did
        return await packing(referenced, grace_seconds, ())

    store.blobs.gc_and_pack = old_gc
    await collect_garbage(store, grace_seconds=0)
    await store.close()
    data = json.loads(cache.read_bytes())
    assert "s1" in data["sessions"]
    cache.write_text(json.dumps({**data, "version": 4}))
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as db:
            db.execute("DROP TABLE blob_bases")
            db.execute("PRAGMA user_version = 5")
    store = open_store(url)
    assert await store.blobs.delta_bases(ids) == {}
    assert [await store.blobs.get(b) for b in ids] == datas
    await collect_garbage(store, grace_seconds=0)
    assert len(await store.blobs.delta_bases(ids)) == len(ids) - 1
    assert [await store.blobs.get(b) for b in ids] == datas
    await store.close()


_GC = """
import asyncio, sys
from agent_host.session import collect_garbage, open_store

async def main():
    store = open_store(sys.argv[1])
    for _ in range(int(sys.argv[2])):
        await collect_garbage(store, grace_seconds=0)
    await store.close()

asyncio.run(main())
"""


async def test_two_collections_at_once_in_two_processes_break_no_chain(url):
    store = open_store(url)
    files = {f"f{n}.py": file_versions(20, seed=n) for n in range(4)}
    ids = {path: await store_versions(store, "s1", path, v) for path, v in files.items()}
    await store.append("s2", [])  # a second session, deleted while they run
    await store_versions(store, "s2", "g.py", file_versions(20, seed=99))
    await store.close()
    procs = [
        subprocess.Popen([sys.executable, "-c", _GC, url, "3"], stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    store = open_store(url)
    await store.delete("s2")
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    await collect_garbage(store, grace_seconds=0)
    for path, versions in files.items():
        assert len(await store.blobs.delta_bases(ids[path])) >= len(versions) - 2
        assert [await store.blobs.get(b) for b in ids[path]] == versions
    await store.close()


async def test_a_collection_waits_for_the_one_under_way(url, tmp_path):
    """Collections take turns on the store's gc lock (one another process holds
    here): neither drops a base the other is making a delta of."""
    import asyncio

    from agent_host.session.store.locking import hold

    store = open_store(url)
    ids = await store_versions(store, "s1", "a.py", file_versions(4))
    if url.startswith("sqlite"):
        lock = tmp_path / "s.db.locks" / "gc.lock"
    else:
        lock = tmp_path / "store" / "blobs.gc.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with hold(str(lock)):
        gc = asyncio.ensure_future(collect_garbage(store, grace_seconds=0))
        await asyncio.sleep(0.5)
        assert not gc.done()
        assert await store.blobs.delta_bases(ids) == {}
    await asyncio.wait_for(gc, timeout=30)
    assert len(await store.blobs.delta_bases(ids)) == 3
    await store.close()


async def test_a_pack_is_written_anew_only_once_a_quarter_of_it_is_garbage(tmp_path):
    """File store: a pack with a few dead entries is left as it is (they, and the
    bases they need, still read back); once they are a quarter of its bytes or
    more, it is written anew without them."""
    from agent_host.session.blob_packs import DEAD_SHARE

    store = open_store(tmp_path / "store")
    kept = {f"k{n}.py": file_versions(10, seed=n) for n in range(4)}
    for path, versions in kept.items():
        await store_versions(store, "kept", path, versions)
    few = file_versions(10, seed=50)
    few_ids = await store_versions(store, "few", "few.py", few)
    await collect_garbage(store, grace_seconds=0)
    (pack,) = store.blobs._packs.names()
    await store.delete("few")  # about a fifth of the pack's bytes
    assert DEAD_SHARE > 1 / 5
    await collect_garbage(store, grace_seconds=0)
    assert store.blobs._packs.names() == {pack}
    assert [await store.blobs.get(b) for b in few_ids] == few
    await store.delete("kept")
    await collect_garbage(store, grace_seconds=0)
    assert store.blobs._packs.names() == set()
    assert await store.blobs.missing(few_ids) == set(few_ids)
    await store.close()


def test_reads_never_miss_while_gc_packs_and_rewrites_packs(tmp_path):
    """File store: another reader (its own view of the packs, as another process
    has) reads every kept version again and again while collections pack new
    versions, drop dead ones and write packs anew: never an error, never other
    bytes."""
    import asyncio
    import threading

    from agent_host.session import blob_delta
    from agent_host.session.blobs import FileBlobStore

    root = tmp_path / "store"
    kept = {f"k{n}.py": file_versions(10, seed=n) for n in range(4)}

    async def setup() -> dict[str, bytes]:
        store = open_store(root)
        ids: dict[str, bytes] = {}
        for path, versions in kept.items():
            blobs = await store_versions(store, "kept", path, versions)
            ids.update(zip(blobs, versions, strict=True))
        await store.close()
        return ids

    contents = asyncio.run(setup())
    reader = FileBlobStore(root / "blobs")
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def read_all() -> None:
        while not stop.is_set():
            for blob, data in contents.items():
                try:
                    got = blob_delta.read_content(blob, reader._stored, root)
                    assert got == data, blob
                    reads[0] += 1
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)
                    return

    async def churn() -> None:
        store = open_store(root)
        for n in range(6):
            for f in range(3):
                await store_versions(
                    store, f"churn{n}", f"c{f}.py", file_versions(10, seed=100 + f)
                )
            await collect_garbage(store, grace_seconds=0)
            await store.delete(f"churn{n}")
            await collect_garbage(store, grace_seconds=0)
        await store.close()

    thread = threading.Thread(target=read_all)
    thread.start()
    try:
        asyncio.run(churn())
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert reads[0] > len(contents)
