"""The file store's index read from its end (file_index_view): a view that reads the
tail whole and the sorted region backwards, block by block, gives every page that
the whole index folded gives -- with ties in updated_at, sessions moved up or
deleted in the tail, any cursor, kept open across writes and rewrites."""

from __future__ import annotations

import os
from pathlib import Path
from tempfile import TemporaryDirectory
from unittest import mock

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_host.session.store import file_index, file_index_view
from agent_host.session.store.file_index_view import IndexView
from agent_host.session.store.info import SessionInfo

IDS = [f"s{n}" for n in range(12)] + ["#", "?", "!", "é"]  # the markers as ids too


def info(sid: str, updated_at: float) -> SessionInfo:
    return SessionInfo(sid, 1.0, updated_at, 3, 1, f"title of {sid}", "/w")


def expected(model: dict[str, SessionInfo], limit: int, after) -> list[SessionInfo]:
    rows = sorted(model.values(), key=lambda i: (i.updated_at, i.id), reverse=True)
    if after is not None:
        rows = [r for r in rows if (r.updated_at, r.id) < tuple(after)]
    return rows[:limit]


# Times from a few values: many ties, which the id must break.
times = st.sampled_from([1.0, 2.0, 2.5, 3.0, 1e9, 1e9 + 0.25])
ops = st.lists(
    st.one_of(
        st.tuples(st.just("record"), st.sampled_from(IDS), times),
        st.tuples(st.just("delete"), st.sampled_from(IDS), st.just(0.0)),
        st.tuples(st.just("look"), st.integers(1, 7), st.just(0.0)),
        st.tuples(st.just("compact"), st.just(""), st.just(0.0)),
    ),
    max_size=40,
)


def walk(view: IndexView, limit: int) -> list[SessionInfo]:
    """Every page of ``limit``, each from the cursor of the last."""
    seen: list[SessionInfo] = []
    after = None
    while True:
        page = view.page(limit, after)
        assert page is not None and not page.pending
        if not page.rows:
            return seen
        assert len(page.rows) <= limit
        seen += page.rows
        assert len(seen) <= len(IDS), "a page came back again"
        after = (page.rows[-1].updated_at, page.rows[-1].id)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    region=st.dictionaries(st.sampled_from(IDS), times, max_size=len(IDS)),
    ops=ops,
    cursors=st.lists(st.tuples(times, st.sampled_from(IDS)), max_size=4),
)
def test_pages_read_from_the_end_equal_pages_of_the_whole_fold(region, ops, cursors):
    with TemporaryDirectory() as tmp, mock.patch.object(file_index_view, "BLOCK", 48):
        # A block of 48 bytes holds no whole line: every read widens, every seek bisects.
        path = Path(tmp) / "index.jsonl"
        model = {sid: info(sid, t) for sid, t in region.items()}
        path.write_bytes(file_index.sorted_form(model, set()))
        kept = IndexView(path)
        for op, arg, t in ops:
            if op == "record":
                model[arg] = info(arg, t)
                line = file_index.info_line(model[arg])
            elif op == "delete":
                model.pop(arg, None)
                line = orjson.dumps(["!", arg]) + b"\n"
            elif op == "compact":  # as the store rewrites it: a new file renamed over
                path.with_name("new").write_bytes(file_index.sorted_form(model, set()))
                os.replace(path.with_name("new"), path)
                continue
            else:
                assert walk(kept, arg) == expected(model, len(model), None)
                continue
            with open(path, "ab") as f:
                f.write(orjson.dumps(["?", arg]) + b"\n")  # as a writer announces itself
                f.write(line)
        loaded = file_index.parse(path.read_bytes())
        assert loaded is not None and loaded.sessions == model  # the reference agrees
        for limit in (1, 2, 5, 50):
            want = expected(model, len(model), None)
            assert walk(IndexView(path), limit) == want
            assert walk(kept, limit) == want
        for after in cursors:  # any cursor, a session's or not
            for view in (IndexView(path), kept):
                page = view.page(3, after)
                assert page is not None and page.rows == expected(model, 3, after)
        for sid, session in model.items():
            assert IndexView(path).info(sid, session.updated_at) == session
            assert IndexView(path).info(sid, session.updated_at + 1) is None
        for sid in set(IDS) - set(model):
            assert IndexView(path).info(sid, 1.0) is None


def big_index(path: Path, sessions: int) -> dict[str, SessionInfo]:
    model = {f"s{n:05d}": info(f"s{n:05d}", 1000.0 + n) for n in range(sessions)}
    path.write_bytes(file_index.sorted_form(model, set()))
    return model


def test_a_new_view_reads_the_tail_and_the_page_not_the_whole_index(tmp_path, monkeypatch):
    path = tmp_path / "index.jsonl"
    model = big_index(path, 5000)
    moved = info("s00007", 9999.0)
    with open(path, "ab") as f:
        f.write(b'["?","s00007"]\n' + file_index.info_line(moved) + b'["!","s04999"]\n')
    read: list[int] = []
    real = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        data = real(fd, n, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(file_index_view.os, "pread", pread)
    view = IndexView(path)
    page = view.page(50, None)
    assert page is not None and not page.loose
    assert [i.id for i in page.rows][:3] == ["s00007", "s04998", "s04997"]
    whole = path.stat().st_size
    assert sum(read) < 2 * file_index_view.BLOCK and whole > 10 * file_index_view.BLOCK
    read.clear()
    middle = model["s02500"]
    page = view.page(50, (middle.updated_at, middle.id))
    assert page is not None and page.rows[0].id == "s02499" and len(page.rows) == 50
    assert sum(read) < 6 * file_index_view.BLOCK, sum(read)  # a bisection, then the page


def test_an_index_without_a_header_is_all_tail(tmp_path):
    """Format 1 (every index before format 2, and a new store's until its first
    compaction): unsorted records, ``?`` and ``!`` lines, read as a tail."""
    path = tmp_path / "index.jsonl"
    lines = [
        file_index.info_line(info("b", 5.0)),
        file_index.info_line(info("a", 7.0)),
        b'["?","c"]\n',
        file_index.info_line(info("c", 6.0)),
        b'["!","a"]\n',
        file_index.info_line(info("d", 1.0)),
    ]
    path.write_bytes(b"".join(lines))
    page = IndexView(path).page(10, None)
    assert page is not None and not page.loose and not page.pending
    assert [i.id for i in page.rows] == ["c", "b", "d"]


def test_a_damaged_header_or_region_is_not_read(tmp_path):
    path = tmp_path / "index.jsonl"
    model = big_index(path, 300)
    data = path.read_bytes()
    for damaged in (
        b'["#",3' + data[data.index(b",", 5) :],  # a format this version does not know
        data[: len(data) // 2],  # the region cut short of what the header says
        data[:-40] + b"\xff" * 40,  # its last rows garbled
    ):
        path.write_bytes(damaged)
        assert IndexView(path).page(5, None) is None
        assert file_index.parse(damaged) is None
    path.write_bytes(data)
    assert [i.id for i in IndexView(path).page(2, None).rows] == ["s00299", "s00298"]
    assert len(model) == 300
