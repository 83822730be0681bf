"""A bad initialize gets a clean invalid-params error: never dropped, never a traceback.

The server is :class:`wire.RawServer`: initialize goes over the raw wire, so its params
can be anything.
"""

from __future__ import annotations

import time

from .conftest import write_script
from .wire import INVALID_PARAMS, RawServer, assert_clean_error, frame


def test_initialize_with_params_not_an_object_is_answered(tmp_path, workspace):
    server = RawServer()
    try:
        server.write(
            frame({"jsonrpc": "2.0", "id": "bad-init", "method": "initialize", "params": "x"})
        )
        # A valid initialize after it is answered (so the bad one was read and handled).
        server.initialize(workspace, tmp_path / "store", write_script(tmp_path / "s.json", []))
        time.sleep(0.1)
        answer = server.response("bad-init", timeout=0)
        assert answer is not None, "no response at all"
        assert answer["error"]["code"] == INVALID_PARAMS
    finally:
        server.close()


def test_initialize_failures_have_no_traceback(tmp_path, workspace):
    server = RawServer()
    problems = []
    try:
        for root, store in [
            (tmp_path / "missing-folder", str(tmp_path / "store")),
            (workspace, "bogus://x"),
        ]:
            answer = server.call(
                "initialize",
                {
                    "processId": None,
                    "rootUri": root.as_uri(),
                    "capabilities": {},
                    "initializationOptions": {"store": store, "model": "scripted:/none.json"},
                },
            )
            try:
                assert "error" in answer, answer
                assert_clean_error(answer)
                assert answer["error"]["code"] == INVALID_PARAMS, answer
            except AssertionError as exc:
                problems.append(f"root {root.name}, store {store}: {str(exc)[:300]}")
    finally:
        server.close()
    assert not problems, "\n".join(problems)
