"""A compaction of the file store's session index, killed before each of its durable
steps (every write of the new file, its fsyncs, the rename), leaves the old index or
the new one, whole: a new store lists and pages every session as before, and the
temp file a kill left is swept by a later compaction."""

from __future__ import annotations

import asyncio
import os
import time

from agent_host.session.events import AssistantMessage, UserPrompt
from agent_host.session.store import file_index
from agent_host.session.store.file import FileCheckpointer
from agent_host.session.store.file_index import SessionIndex

from ..crash_points import every_step, killed_at

LATE = b'["?","s03"]\n["s03",1.0,4102444800.0,9,4,"moved up meanwhile",""]\n'
"""What a writer appends while the compaction builds its file (see _compact)."""


def _build(root) -> None:
    async def build() -> None:
        store = FileCheckpointer(root)
        for n in range(12):
            await store.append(f"s{n:02d}", [UserPrompt(text=f"p{n}")])
        for n in range(60):  # a loose tail: 144 lines over no region
            await store.append(f"s{n % 7:02d}", [AssistantMessage(text=f"a{n}")])
        await store.close()

    asyncio.run(build())


def _compact(root) -> None:
    """Compact, in the child killed_at forks, with a writer appending to the old
    index between the build and the lock. (No asyncio: only the index's own code.)"""
    index = SessionIndex(root)
    real_replace = SessionIndex._replace

    def late_write_then_replace(self, *args):
        with open(self.path, "ab") as f:  # not os.write: not a step of the compaction
            f.write(LATE)
        return real_replace(self, *args)

    SessionIndex._replace = late_write_then_replace  # type: ignore[method-assign]
    index.compact()


async def _listed(root) -> tuple[list, list]:
    store = FileCheckpointer(root)
    try:
        return await store.list(), await store.list_page(4)
    finally:
        await store.close()


def test_a_compaction_killed_at_every_durable_step_leaves_an_index_whole(tmp_path):
    template = tmp_path / "template"
    _build(template)
    old = (template / "index.jsonl").read_bytes()
    assert not old.startswith(b'["#"') and file_index.parse(old).loose
    folds = [file_index.parse(old).sessions, file_index.parse(old + LATE).sessions]

    def run_case(k: int) -> tuple[bool, int]:
        root = tmp_path / f"case-{k}"
        os.system(f"cp -a {template} {root}")
        killed, steps = killed_at(k, lambda _: _compact(root), extra_steps=("write",))
        data = (root / "index.jsonl").read_bytes()
        compacted = data.startswith(b'["#",2,')
        assert data in (old, old + LATE) or compacted, k
        loaded = file_index.parse(data)
        assert loaded is not None and loaded.sessions in folds, k
        if compacted:  # the writer's lines came over, after the sorted region
            assert loaded.sessions == folds[1] and not loaded.loose, k
        everything, page = asyncio.run(_listed(root))
        want = sorted(loaded.sessions.values(), key=lambda i: -i.updated_at)
        assert everything == want and page == want[:4], k
        strays = list(root.glob(".index.*.tmp"))
        assert len(strays) <= 1, k
        if strays:  # a crash's leftover, an hour later: the next compaction sweeps it
            os.utime(strays[0], (time.time() - 2 * file_index.STRAY_AGE,) * 2)
            with open(root / "index.jsonl", "ab") as f:
                f.write(b'["?","s05"]\n' * 400)  # loose again
            SessionIndex(root).compact()
            assert not list(root.glob(".index.*.tmp")), k
        return killed, steps

    # The new file's write and fsync, the late lines' write and fsync, the rename.
    steps = every_step(run_case)
    assert steps == 5, steps
