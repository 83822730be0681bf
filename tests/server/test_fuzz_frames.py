"""Over 10,000 frames -- requests, notifications, garbage, bad headers, lying lengths --
written in batches to one server: every well-formed request is answered exactly
once, stdout carries nothing but frames, and the server's memory stays bounded."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .wire import frame, raw_server, status_kib

BATCHES = 50
PER_BATCH = 220  # 11,000 frames in all

REQUEST = st.sampled_from(["session/list", "session/nope", "session/history", ""]).map(
    lambda method: ("request", method)
)
NOTIFICATION = st.sampled_from(
    [
        (
            "notification",
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}},
        ),
        ("notification", {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "none"}}),
        ("notification", {"jsonrpc": "2.0", "method": "session/whatever"}),
    ]
)
GARBAGE = st.one_of(
    st.binary(max_size=40).filter(lambda b: b"Content-Length" not in b).map(frame),
    st.binary(max_size=40).filter(lambda b: b"Content-Length" not in b),
    st.sampled_from([b"[1,", b"{}", b"null", b'{"jsonrpc": "2.0"}', b'{"id": 1}']).map(frame),
).map(lambda data: ("raw", data))
BAD_HEADER = st.sampled_from(
    [
        b"Content-Length: abc\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Length: 12",
        b"Content-Length: 7\r\n\r\n",
        b"Content-Length: 0\r\n\r\n",
        b"Content-Length: 99999999999999\r\n\r\n",
        b"X-Foo: bar\r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc\r\n",
        b"\r\n" * 5,
        b"H" * 20_000,
    ]
).map(lambda data: ("raw", data))
LIE = st.integers(-30, 60).filter(bool).map(lambda delta: ("lie", delta))
PIECES = st.lists(
    st.one_of(REQUEST, REQUEST, NOTIFICATION, GARBAGE, BAD_HEADER, LIE),
    min_size=PER_BATCH,
    max_size=PER_BATCH,
)


@pytest.mark.slow
def test_ten_thousand_frames_to_one_server(tmp_path, workspace):
    ids = itertools.count()
    expected: list[str] = []
    frames = 0
    with raw_server(tmp_path, workspace) as server:
        server.probe()
        before = status_kib(server.proc.pid)
        peak = before
        started = time.monotonic()

        @settings(
            max_examples=BATCHES,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(PIECES)
        def batch(pieces) -> None:
            nonlocal frames, peak
            out = bytearray()
            for kind, value in pieces:
                if kind == "request":
                    msg_id = f"ok-{next(ids)}"
                    expected.append(msg_id)
                    out += frame({"jsonrpc": "2.0", "id": msg_id, "method": value, "params": {}})
                elif kind == "notification":
                    out += frame(value)
                elif kind == "lie":
                    body = json.dumps({"jsonrpc": "2.0", "id": f"lie-{next(ids)}", "method": "x"})
                    out += b"Content-Length: %d\r\n\r\n" % max(1, len(body) + value)
                    out += body.encode()
                else:
                    out += value
            frames += len(pieces)
            server.write(bytes(out))
            server.probe()
            peak = max(peak, status_kib(server.proc.pid))

        batch()
        print(f"{frames} frames, {len(expected)} requests, RSS +{(peak - before) // 1024} MiB")
        assert frames >= 10_000
        for msg_id in expected[-50:]:
            assert server.response(msg_id, timeout=10) is not None, f"{msg_id} unanswered"
        answers: dict[str, int] = {}
        for message in server.messages:
            if "method" not in message and isinstance(message.get("id"), str):
                answers[message["id"]] = answers.get(message["id"], 0) + 1
        missing = [msg_id for msg_id in expected if msg_id not in answers]
        assert not missing, f"{len(missing)} requests unanswered, e.g. {missing[:5]}"
        twice = {msg_id: n for msg_id, n in answers.items() if n > 1}
        assert not twice, f"answered more than once: {list(twice.items())[:5]}"
        assert peak - before < 50 * 1024, f"RSS grew by {(peak - before) // 1024} MiB"
        assert time.monotonic() - started < 90
    # raw_server's exit checks that stdout carried nothing but frames.
