"""Garbage on the wire never kills the server, and every request gets exactly one answer.

The server is :class:`wire.RawServer`: raw bytes in, stdout parsed strictly as LSP frames.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .conftest import write_script
from .wire import RawServer, assert_clean_error, frame, raw_server

LIST = {"jsonrpc": "2.0", "id": "lost", "method": "session/list", "params": {}}
LIST_BODY = json.dumps(LIST).encode()

GARBAGE: list[tuple[str, bytes]] = [
    ("malformed JSON", frame(b'{"jsonrpc": "2.0", "id": 1, "method": ')),
    ("not JSON at all", frame(b"hello, server")),
    ("invalid UTF-8", frame(b'{"jsonrpc": "2.0", "method": "\xff\xfe"}')),
    ("empty body", b"Content-Length: 0\r\n\r\n"),
    ("JSON array (batch)", frame([LIST])),
    ("empty array", frame(b"[]")),
    ("JSON number", frame(b"42")),
    ("JSON string", frame(b'"session/list"')),
    ("JSON null", frame(b"null")),
    ("object without jsonrpc", frame({"id": 1, "method": "session/list"})),
    ("wrong jsonrpc version", frame({"jsonrpc": "1.0", "id": 1, "method": "session/list"})),
    ("jsonrpc only", frame({"jsonrpc": "2.0"})),
    ("id only", frame({"jsonrpc": "2.0", "id": 99})),
    ("response to nothing", frame({"jsonrpc": "2.0", "id": 99, "result": {"x": 1}})),
    ("error to nothing", frame({"jsonrpc": "2.0", "id": 98, "error": {"code": 1, "message": "x"}})),
    ("method not a string", frame({"jsonrpc": "2.0", "id": 97, "method": 5})),
    (
        "notification, params a string",
        frame({"jsonrpc": "2.0", "method": "session/cancel", "params": "x"}),
    ),
    (
        "cancelRequest without id",
        frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {}}),
    ),
    ("deeply nested", frame(b"[" * 100_000 + b"]" * 100_000)),
    ("Content-Length too small", b"Content-Length: 5\r\n\r\n" + LIST_BODY),
    ("Content-Length too large", b"Content-Length: 90\r\n\r\n" + b'{"jsonrpc": "2.0"}'),
    ("Content-Length not a number", b"Content-Length: many\r\n\r\n" + LIST_BODY),
    ("Content-Length negative", b"Content-Length: -5\r\n\r\n" + LIST_BODY),
    ("no headers at all", LIST_BODY),
    ("no headers, with line break", LIST_BODY + b"\r\n"),
    ("LF-only header", b"Content-Length: %d\n\n" % len(LIST_BODY) + LIST_BODY),
    ("unknown header only", b"X-Whatever: yes\r\n\r\n" + LIST_BODY),
    ("header line without end", b"Content-Length: 12"),
    ("binary noise", bytes(range(256)) * 4),
    ("a lone CR LF storm", b"\r\n" * 1000),
]


def test_garbage_on_the_wire_never_kills_the_server(tmp_path, workspace):
    with raw_server(tmp_path, workspace) as server:
        for name, garbage in GARBAGE:
            server.write(garbage)
            try:
                server.probe()
            except BaseException as exc:
                raise AssertionError(f"after {name!r}: {exc}") from exc
        # A request the garbage carried is answered at most once ...
        assert len([m for m in server.messages if m.get("id") == "lost"]) <= 1
        # ... and a normal request still works end to end.
        answer = server.call("session/send", {"prompt": "after all that"})
        assert answer["result"]["stopReason"] == "end_turn"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
METHODS = st.sampled_from(
    [
        "session/new",
        "session/send",
        "session/list",
        "session/resume",
        "session/history",
        "session/delete",
        "session/checkpoints",
        "session/restore",
        "session/undoRestore",
        "session/compact",
        "session/cancel",
        "session/nope",
        "$/cancelRequest",
        "textDocument/hover",
        "",
    ]
)
SESSION_PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "sessionId": st.sampled_from(["s1", "s2", "../s", ""]) | JSON,
        "prompt": st.text(max_size=10) | JSON,
        "seq": st.integers(-2, 12) | JSON,
        "limit": st.integers(-2, 5) | JSON,
        "cursor": st.sampled_from(["0", "1", "x"]) | JSON,
        "title": JSON,
        "files": JSON,
    },
)
WIRE_BYTES = st.one_of(
    st.binary(max_size=80).filter(lambda b: b"Content-Length" not in b),
    st.binary(max_size=80).map(frame),
    JSON.map(lambda value: frame(json.dumps(value).encode())),
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "method": METHODS},
        optional={"params": SESSION_PARAMS | JSON},
    ).map(frame),
)


@pytest.fixture(scope="module")
def shared_raw(tmp_path_factory):
    """One raw server for the "is every request answered" checks (none kills it)."""
    tmp_path = tmp_path_factory.mktemp("shared-raw")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with raw_server(tmp_path, workspace) as server:
        yield server


def test_random_bytes_never_kill_the_server(tmp_path, workspace):
    with raw_server(tmp_path, workspace) as server:

        @settings(
            max_examples=50,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],  # no shrinking: bounded even when failing
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(WIRE_BYTES)
        def survives(garbage: bytes) -> None:
            server.write(garbage)
            server.probe()

        survives()


def test_every_request_gets_exactly_one_answer(shared_raw):
    """Well-framed requests with arbitrary params: one response each, a result or
    a JSON-RPC error with a known code, never a traceback."""
    known = {-32601, -32602, -32603, -32800, *range(-32011, -32000)}
    server = shared_raw

    @settings(
        max_examples=60,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: bounded even when failing
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    # textDocument/hover: pygls structures LSP methods' params in its reader and
    # drops the request when that fails (initialize: see test_bad_initialize.py).
    @given(
        METHODS.filter(
            lambda m: m not in ("session/cancel", "$/cancelRequest", "textDocument/hover")
        ),
        SESSION_PARAMS | JSON,
    )
    def answered(method: str, params) -> None:
        msg_id = server.send(method, params)
        answer = server.response(msg_id, timeout=5)
        assert answer is not None, f"{method} {params!r} was never answered"
        if "error" in answer:
            assert answer["error"]["code"] in known, answer
            assert answer["error"]["code"] != -32603, f"internal error: {answer}"
            assert_clean_error(answer)
        else:
            assert "result" in answer, answer

    answered()
    ids = [m["id"] for m in server.messages if "id" in m and "method" not in m]
    assert len(ids) == len(set(ids)), "a request was answered twice"


# -- server bugs the above found (fixed; these tests keep them fixed)


def answered_before_probe(server: RawServer, message: dict) -> dict | None:
    """Send ``message``, then a probe; the answer to ``message`` if it came.

    Both are handled in order by the reader, and the errors in question are sent
    synchronously, so once the probe is answered an answer would be there.
    """
    server.write(frame(message))
    server.probe()
    time.sleep(0.1)
    return server.response(message["id"], timeout=0)


@pytest.mark.exclusive  # the answer must beat a probe by 0.1 s
def test_request_with_a_nested_jsonrpc_key_is_answered(shared_raw):
    answer = answered_before_probe(
        shared_raw,
        {
            "jsonrpc": "2.0",
            "id": "nested-jsonrpc",
            "method": "session/send",
            "params": {"prompt": "look", "context": [{"text": "x", "jsonrpc": "2.0"}]},
        },
    )
    assert answer is not None, "no response at all"


@pytest.mark.exclusive  # the answer must beat a probe by 0.1 s
def test_request_with_an_extra_member_is_answered(shared_raw):
    answer = answered_before_probe(
        shared_raw,
        {"jsonrpc": "2.0", "id": "extra", "method": "session/list", "params": {}, "x": 1},
    )
    assert answer is not None, "no response at all"


def test_a_huge_content_length_does_not_kill_the_server(tmp_path, workspace):
    server = RawServer()
    try:
        server.initialize(workspace, tmp_path / "store", write_script(tmp_path / "s.json", []))
        server.write(b"Content-Length: 99999999999999\r\n\r\n")
        time.sleep(1.5)
        assert server.proc.poll() is None, f"the server died{server._state()}"
        # The frame is refused, not waited for: the next request is answered.
        server.probe()
    finally:
        server.close()
