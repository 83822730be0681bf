"""A batch of blobs (one capture's, one restore's) is written as one pack: its bytes
synced, renamed into place, its folder synced. Killed before each of those durable
steps, it leaves every blob whole or absent -- never a pack that reads as holding a
blob it does not hold whole -- and the batch written again completes, with the
strays gc removes."""

from __future__ import annotations

import asyncio

from agent_host.session import blob_codec
from agent_host.session.blobs import FileBlobStore, blob_id

from . import file_blob_tamper
from .crash_points import every_step, killed_at

DATAS = [b"".join(b"file %d line %d\n" % (f, n) for n in range(300)) for f in range(10)]


def test_a_batch_of_blobs_killed_at_every_durable_step_leaves_each_whole_or_absent(tmp_path):
    ids = [blob_id(d) for d in DATAS]

    def run_case(k: int) -> tuple[bool, int]:
        """The batch written in a child killed before durable step k, then checked.
        (The child: no asyncio, no pytest, only the store's own code.)"""
        root = tmp_path / f"case-{k}" / "blobs"
        killed, steps = killed_at(k, lambda _: FileBlobStore(root)._put_many(list(DATAS)))
        store = FileBlobStore(root)
        for blob, data in zip(ids, DATAS, strict=True):
            stored = store._stored(blob)
            if stored is not None:  # a blob is only ever found whole
                assert blob_codec.decode(blob, stored) == data, (k, blob)
        # Found all or none: one pack holds the batch.
        assert len(asyncio.run(store.missing(ids))) in (0, len(ids)), k
        # The batch again (a retry after the crash) stores them all.
        assert store._put_many(list(DATAS)) == ids
        assert asyncio.run(store.missing(ids)) == set()
        for blob, data in zip(ids, DATAS, strict=True):
            assert asyncio.run(store.get(blob)) == data
        strays = [p for p in root.rglob(".tmp-*")]
        gc = asyncio.run(store.gc(set(ids), grace_seconds=0))
        assert gc.removed == len(strays) and not list(root.rglob(".tmp-*"))
        if not killed:  # the pack, not a file a blob
            assert not [p for p in root.iterdir() if len(p.name) == 2]
            assert file_blob_tamper.stored_bytes(store, ids[0]) == blob_codec.encode(DATAS[0])
        return killed, steps

    # One pack: its fsync, its rename, its folder's fsync -- not two syncs a blob.
    steps = every_step(run_case)
    assert steps == 3, steps
