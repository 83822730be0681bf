"""Damage is never silently cut: only what a crash can leave is a torn write.

A crash leaves a prefix of the last append, or (power cut) holes of zeros in it;
both are cut aside. Any other change to the last append -- every single flipped
byte of it, its flags and newlines included -- is damage to acknowledged data: the
read raises and the file stays exactly as it was. The truncation stash keeps its
whole records whatever happens to the others.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from agent_host.session import CorruptLogError, FileCheckpointer
from agent_host.session.events import AssistantMessage, ToolCall, UserPrompt

from .logs import content, write_at_content_end

SESSION = "s1"
EARLIER = ["one", "two", "three"]

LAST_APPENDS = {
    "four_events": [
        UserPrompt(text="four"),
        AssistantMessage(text="five"),
        ToolCall(call_id="c6", name="read_file", arguments={"path": "x"}),
        AssistantMessage(text="seven"),
    ],
    "one_event": [AssistantMessage(text="four")],
}


async def build(root: Path, last: list) -> tuple[Path, int]:
    """A log of three earlier appends, then ``last``; return it and where ``last`` starts."""
    store = FileCheckpointer(root)
    for text in EARLIER:
        await store.append(SESSION, [UserPrompt(text=text)])
    log = root / "sessions" / f"{SESSION}.jsonl"
    start = len(content(log))
    await store.append(SESSION, last)
    await store.close()
    return log, start


async def read_fresh(root: Path) -> list:
    """Read the session as a restarted process would."""
    store = FileCheckpointer(root)
    try:
        return await store.read(SESSION)
    finally:
        await store.close()


def texts(events) -> list[str]:
    return [getattr(e, "text", None) or e.call_id for e in events]


def copy_of(pristine: Path, work: Path) -> Path:
    """A copy of the store; each case then rewrites its log (a copy per case is slow)."""
    shutil.copytree(pristine, work)
    return work / "sessions" / f"{SESSION}.jsonl"


@pytest.mark.parametrize("last", LAST_APPENDS)
async def test_every_flipped_byte_of_the_last_append_raises_and_changes_nothing(tmp_path, last):
    pristine = tmp_path / "pristine"
    log, start = await build(pristine, LAST_APPENDS[last])
    original = log.read_bytes()
    work = tmp_path / "work"
    copy = copy_of(pristine, work)
    for pos in range(start, len(content(log))):
        damaged = bytearray(original)
        damaged[pos] ^= 0x01  # 0x0a -> 0x0b: a newline, the final one too, is changed
        copy.write_bytes(damaged)
        with pytest.raises(CorruptLogError) as raised:
            await read_fresh(work)
        assert str(copy) in str(raised.value), pos
        assert copy.read_bytes() == damaged, f"byte {pos}: the log was changed"
        assert not (work / "torn").exists(), f"byte {pos}: something was cut"


@pytest.mark.parametrize("last", LAST_APPENDS)
async def test_every_prefix_of_the_last_append_is_a_torn_write(tmp_path, last):
    """A write cut short anywhere -- mid-line or between lines -- is cut aside whole."""
    pristine = tmp_path / "pristine"
    log, start = await build(pristine, LAST_APPENDS[last])
    original, data = log.read_bytes(), content(log)
    work = tmp_path / "work"
    copy = copy_of(pristine, work)
    for cut in range(start + 1, len(data)):
        copy.write_bytes(original)
        write_at_content_end(copy, cut, b"")  # zeros where the rest never arrived
        assert texts(await read_fresh(work)) == EARLIER, cut
        assert copy.read_bytes() == data[:start], cut
        (kept,) = (work / "torn").iterdir()
        assert kept.read_bytes() == data[start:cut], cut
        kept.unlink()
    assert len(texts(await read_fresh(pristine))) == 3 + len(LAST_APPENDS[last])


@pytest.mark.parametrize("with_newline", [True, False], ids=["line", "line_but_newline"])
async def test_a_hole_of_zeros_in_the_last_append_is_torn(tmp_path, with_newline):
    """A power cut can lose a middle page of an unsynced write: its line holds zeros,
    later lines of the same append are whole. That append was never acknowledged."""
    root = tmp_path / "store"
    log, start = await build(root, LAST_APPENDS["four_events"])
    data = content(log)
    second = data.index(b"\n", start) + 1
    third = data.index(b"\n", second) + 1
    holed = data[:second] + bytes(third - second - (0 if with_newline else 1))
    holed += data[len(holed) :]
    write_at_content_end(log, 0, holed)
    assert texts(await read_fresh(root)) == EARLIER
    assert log.read_bytes() == data[:start]
    (kept,) = (root / "torn").iterdir()
    assert kept.read_bytes() == holed[start:]


async def test_bytes_after_the_last_line_that_start_no_record_are_damage(tmp_path):
    root = tmp_path / "store"
    log, _ = await build(root, LAST_APPENDS["one_event"])
    data = content(log)
    for tail in (b"not a record", b'{"batch":"x"', b'{"batch":"1","crc":"0000000g"'):
        write_at_content_end(log, len(data), tail)
        with pytest.raises(CorruptLogError, match="no record"):
            await read_fresh(root)
    assert not (root / "torn").exists()


# -- the truncation stash


async def stash_of_three(root: Path) -> tuple[Path, list[bytes]]:
    """A session truncated three times: its stash holds three records."""
    store = FileCheckpointer(root)
    await store.append(SESSION, [UserPrompt(text=f"e{n}") for n in range(1, 7)])
    for seq in (5, 4, 3):
        await store.truncate(SESSION, seq)
    await store.close()
    stash = root / "truncated" / f"{SESSION}.jsonl"
    lines = stash.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3
    return stash, lines


async def truncations_fresh(root: Path) -> list:
    store = FileCheckpointer(root)
    try:
        return await store.truncations(SESSION)
    finally:
        await store.close()


def flip_inside(line: bytes) -> bytes:
    damaged = bytearray(line)
    damaged[len(line) // 2] ^= 0x01
    return bytes(damaged)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda lines: (lines[:2] + [flip_inside(lines[2])], 2), id="last_flipped"),
        pytest.param(lambda lines: ([flip_inside(lines[0])] + lines[1:], 0), id="first_flipped"),
        pytest.param(
            lambda lines: (lines[:2] + [lines[2][: len(lines[2]) // 2]], 2), id="last_torn"
        ),
        pytest.param(lambda lines: (lines[:2] + [lines[2][:-1]], 2), id="last_without_newline"),
    ],
)
async def test_a_bad_stash_record_is_moved_aside_and_the_others_kept(tmp_path, caplog, damage):
    root = tmp_path / "store"
    stash, lines = await stash_of_three(root)
    assert [t.seq for t in await truncations_fresh(root)] == [5, 4, 3]
    changed, bad_at = damage(lines)
    stash.write_bytes(b"".join(changed))
    kept_lines = [line for n, line in enumerate(lines) if n != bad_at]

    with caplog.at_level(logging.WARNING):
        found = await truncations_fresh(root)
    removed = [["e6"], ["e5"], ["e4"]]  # by truncate to 5, to 4, to 3
    assert [texts(t.events) for t in found] == [r for n, r in enumerate(removed) if n != bad_at]
    assert stash.read_bytes() == b"".join(kept_lines)
    (kept,) = (root / "torn").iterdir()
    assert kept.name.startswith(f"{SESSION}.truncated.") and kept.suffix == ".bin"
    assert kept.read_bytes() == changed[bad_at]
    assert str(stash) in caplog.text and str(kept) in caplog.text

    # Read again: nothing more is moved, and the log itself was never touched.
    assert [t.seq for t in await truncations_fresh(root)] == [t.seq for t in found]
    assert len(list((root / "torn").iterdir())) == 1
    assert texts(await read_fresh(root)) == ["e1", "e2", "e3"]


async def test_a_truncation_after_a_record_was_moved_aside_gets_a_new_id(tmp_path):
    root = tmp_path / "store"
    stash, lines = await stash_of_three(root)
    stash.write_bytes(flip_inside(lines[0]) + b"".join(lines[1:]))  # ids 2 and 3 remain
    store = FileCheckpointer(root)
    try:
        assert [t.id for t in await store.truncations(SESSION)] == [2, 3]
        cut = await store.truncate(SESSION, 1)
        assert cut.id == 4
        assert [t.id for t in await store.truncations(SESSION)] == [2, 3, 4]
    finally:
        await store.close()


async def test_one_damaged_log_does_not_hide_the_other_sessions_from_list(tmp_path, caplog):
    root = tmp_path / "store"
    log, start = await build(root, [AssistantMessage(text="x")])
    store = FileCheckpointer(root)
    await store.append("healthy", [UserPrompt(text="still here")])
    await store.close()
    data = bytearray(log.read_bytes())
    data[start + 20] ^= 0x01
    log.write_bytes(bytes(data))
    (root / "index.jsonl").unlink()  # list() rebuilds the index from the logs
    store = FileCheckpointer(root)
    try:
        with caplog.at_level(logging.WARNING):
            listed = await store.list()
        assert [i.id for i in listed] == ["healthy"]
        assert str(log) in caplog.text
        with pytest.raises(CorruptLogError, match=str(log)):
            await store.read(SESSION)
    finally:
        await store.close()
