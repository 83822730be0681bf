"""Short appends on a fast disk run on the event loop; anything that would wait does not."""

from __future__ import annotations

import asyncio
import fcntl
import os

import pytest

from agent_host.session import StoreBusy, open_store
from agent_host.session.events import AssistantMessage, UserPrompt
from agent_host.session.store import file as file_store
from agent_host.session.store import locking
from agent_host.session.store.pacing import INLINE_BELOW, SyncPacer, WouldBlock


@pytest.fixture
def threads(monkeypatch):
    """Every store call that went to a worker thread, by function name."""
    names: list[str] = []
    real = file_store.FileCheckpointer._call

    async def counting(self, fn, *args):
        names.append(fn.__name__)
        return await real(self, fn, *args)

    monkeypatch.setattr(file_store.FileCheckpointer, "_call", counting)
    return names


def fast_disk(store) -> None:
    """Pretend the disk is fast, whatever this machine's syncs take right now."""
    store._pacer.inline = lambda: True


def test_pacer_goes_to_the_thread_after_one_slow_sync_and_back_when_fast_again():
    pacer = SyncPacer()
    assert not pacer.inline()  # nothing measured yet
    pacer.observe(INLINE_BELOW / 5)
    assert pacer.inline()
    pacer.observe(INLINE_BELOW * 20)  # a stall counts in full at once
    assert not pacer.inline()
    fast = 0
    while not pacer.inline():
        pacer.observe(INLINE_BELOW / 5)
        fast += 1
    assert 5 <= fast <= 30  # and it takes a run of fast syncs to come back


async def test_appends_after_the_first_run_inline_on_a_fast_disk(tmp_path, threads):
    store = open_store(tmp_path / "s")
    await store.append("a", [UserPrompt(text="hi")])
    fast_disk(store)
    for n in range(5):
        await store.append("a", [AssistantMessage(text=str(n))])
    assert threads == ["_append"]  # only the first, which made the log
    assert [e.seq for e in await store.read("a")] == list(range(1, 7))


async def test_a_slow_disk_keeps_appends_on_the_thread(tmp_path, threads):
    store = open_store(tmp_path / "s")
    await store.append("a", [UserPrompt(text="hi")])
    store._pacer.observe(INLINE_BELOW * 50)
    await store.append("a", [AssistantMessage(text="x")])
    assert threads == ["_append", "_append"]


async def test_a_lock_held_elsewhere_sends_the_append_to_the_thread(tmp_path, threads):
    """The loop keeps running while the lock is held; the append lands once it is free."""
    store = open_store(tmp_path / "s")
    await store.append("a", [UserPrompt(text="hi")])
    fast_disk(store)
    holder = os.open(tmp_path / "s" / "locks" / "a.lock", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        append = asyncio.create_task(store.append("a", [AssistantMessage(text="late")]))
        ticks = 0
        while ticks < 5:  # the loop is not blocked by the held lock
            await asyncio.sleep(0.01)
            ticks += 1
        assert not append.done()
    finally:
        fcntl.flock(holder, fcntl.LOCK_UN)
        os.close(holder)
    assert await append == 2
    assert threads == ["_append", "_append"]
    assert [e.text for e in await store.read("a")] == ["hi", "late"]


async def test_a_log_another_process_grew_a_lot_is_read_on_the_thread(tmp_path, threads):
    ours, theirs = open_store(tmp_path / "s"), open_store(tmp_path / "s")
    await ours.append("a", [UserPrompt(text="hi")])
    fast_disk(ours)
    await theirs.append("a", [AssistantMessage(text="x" * 200_000)])
    threads.clear()
    assert await ours.append("a", [AssistantMessage(text="mine")]) == 3
    assert threads == ["_append"]
    await ours.append("a", [AssistantMessage(text="again")])
    assert threads == ["_append"]  # caught up: inline again
    texts = [e.text for e in await theirs.read("a")]
    assert texts == ["hi", "x" * 200_000, "mine", "again"]


async def test_an_index_rewrite_under_way_sends_the_append_to_the_thread(tmp_path, threads):
    """A rewrite holds the index exclusive; an inline append must not wait for it on
    the loop, and its index lines must go to the new file, not the replaced one."""
    store = open_store(tmp_path / "s")
    await store.append("a", [UserPrompt(text="hi")])
    fast_disk(store)
    threads.clear()
    with locking.hold(str(tmp_path / "s" / "index.lock")):  # as a rewrite does
        append = asyncio.create_task(store.append("a", [AssistantMessage(text="later")]))
        await asyncio.sleep(0.05)
        assert not append.done()  # waiting on a thread; the loop runs
    assert await append == 2
    assert threads == ["_append"]
    assert [(i.id, i.head) for i in await open_store(tmp_path / "s").list()] == [("a", 2)]


def test_the_index_stays_shared_until_the_last_thread_of_a_store_lets_go(tmp_path):
    """flock belongs to the open file: one thread's release must not free another's hold."""
    path = str(tmp_path / "index.lock")
    shared = locking.SharedHold(path)
    with shared.held():
        with shared.held():  # a second thread of the same store
            pass
        with pytest.raises(StoreBusy):
            with locking.hold(path, timeout=0.1):  # a rewrite must still wait
                pass
    with locking.hold(path, timeout=1):
        with pytest.raises(WouldBlock):
            with shared.held(wait=False):
                pass
    shared.close()


async def test_a_large_append_is_written_on_the_thread(tmp_path, threads):
    store = open_store(tmp_path / "s")
    await store.append("a", [UserPrompt(text="hi")])
    fast_disk(store)
    threads.clear()
    await store.append("a", [AssistantMessage(text="small")])
    assert threads == []
    await store.append("a", [AssistantMessage(text="x" * 300_000)])
    assert threads == ["_append"]
    assert [len(e.text) for e in await open_store(tmp_path / "s").read("a")] == [2, 5, 300_000]
