"""The model's key, planted in the agent's environment, in no output the project makes.

A real ``agent-host serve`` (and ``agent-host run --json``) talks to a loopback
OpenAI server; the model asks for a command that digs the key out of
``/proc/$PPID/environ`` and prints it whole, cut, uppercased, spaced, reversed,
percent-encoded and in base64 (tests/secret_forms.py), then a second prompt gets an
error whose text echoes the key in those forms past the 300 characters an error
keeps. Every byte the project wrote is then searched for every form: the server's
stdout frames, its stderr (logging at debug), the session store's files, the
request bodies the model server received, the ``--json`` lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import secret_forms
from tests.server.wire import RawServer, frame
from tests.session.providers.fakes import (
    OPENAI_DONE,
    FakeServer,
    json_response,
    openai_chunk,
    sse,
    tool_fragment,
)

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="the leak reads /proc"),
]

KEY = secret_forms.KEY


def leak_turn() -> list:
    """The model's two answers to the first prompt: the leaking command, then text."""
    arguments = json.dumps({"command": secret_forms.LEAK})
    call = sse(
        [
            openai_chunk({"role": "assistant", "content": ""}),
            openai_chunk(tool_fragment(0, id="call_leak", name="run_command", arguments=arguments)),
            openai_chunk(finish="tool_calls"),
            OPENAI_DONE,
        ]
    )
    # A model that repeats a key it saw: its text is masked too, in the log and on the wire.
    text = f"Done; the key was {KEY[::-1]}."
    done = sse([openai_chunk({"content": text}), openai_chunk(finish="stop"), OPENAI_DONE])
    return [call, done]


def echoing_error() -> object:
    """A 400 whose message echoes the key in every form, after 240 characters."""
    forms = " ".join(v for k, v in secret_forms.forms().items() if k != "password")
    message = f"{'bad request ' * 20}: {forms} {secret_forms.DATABASE_URL}"
    return json_response(400, {"error": {"message": message, "type": "invalid_request_error"}})


@pytest.fixture
def model_server(monkeypatch):
    server = FakeServer([*leak_turn(), echoing_error()]).start()
    for name, value in secret_forms.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    yield server
    server.stop()


def store_bytes(store: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file())


def assert_clean(where: str, data: str | bytes) -> None:
    found = secret_forms.leaks(data)
    assert not found, f"{where} holds the key as {found}"


@pytest.fixture
def unconfined(monkeypatch):
    """Commands unconfined (sandbox full): masking is tested as the last defence, so
    the command must reach the key in the agent's /proc environ, which the default
    sandbox (a pid namespace of its own) keeps out of reach
    (tests/session/test_sandbox_escapes.py)."""
    monkeypatch.setenv("AGENT_HOST_SANDBOX", "full")


def test_the_lsp_server_masks_the_key_in_every_output(tmp_path, model_server, unconfined):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = tmp_path / "store"
    server = RawServer(
        cwd=workspace, command=[sys.executable, "-m", "agent_host", "serve", "--verbose"]
    )
    try:
        server.initialize(workspace, store, "openai/gpt-4.1-mini")
        sent = server.call("session/send", {"prompt": "show me your key"}, timeout=60)
        assert sent["result"]["stopReason"] == "end_turn", sent
        sid = sent["result"]["sessionId"]
        history = server.call("session/history", {"sessionId": sid})
        failed = server.call("session/send", {"prompt": "again", "sessionId": sid}, timeout=60)
        # A bad message is logged with its text: a client's echo of the key reaches the log.
        server.write(frame({"jsonrpc": "2.0", "id": 7, "method": 7, "params": [KEY.upper()]}))
        server.probe()
    finally:
        server.close()
    server.assert_protocol_only()

    [tool] = [m for m in history["result"]["messages"] if m["role"] == "tool"]
    secret_forms.check_masked_output(tool["content"])
    error = failed["error"]["message"]
    assert "rejected the request" in error and "[redacted]" in error, error
    assert_clean("the error on the wire", json.dumps(failed))

    assert_clean("the server's stdout", bytes(server.out))
    stderr = bytes(server.stderr)
    assert b"invalid message" in stderr  # the log had the key to mask
    assert_clean("the server's stderr", stderr)
    assert_clean("the session store", store_bytes(store))
    bodies = [json.dumps(r.body) for r in model_server.received]
    assert len(bodies) == 3 and "[redacted]" in bodies[1]  # the tool result went back
    for i, body in enumerate(bodies):
        assert_clean(f"model request {i + 1}", body)
    assert all(KEY in r.headers["authorization"] for r in model_server.received)


def test_run_json_masks_the_key_in_its_lines_and_stderr(tmp_path, model_server, unconfined):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = tmp_path / "store"
    common = [
        sys.executable,
        "-m",
        "agent_host",
        "run",
        "--json",
        "--model",
        "openai/gpt-4.1-mini",
        "--store",
        str(store),
        "--workspace",
        str(workspace),
        "--approve",
        "auto",
        "--verbose",
    ]
    first = subprocess.run(
        [*common, "show me your key"], capture_output=True, timeout=90, env=os.environ
    )
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    [result] = [line["data"] for line in lines if line["kind"] == "tool_result"]
    secret_forms.check_masked_output(result["output"])
    sid = lines[-1]["data"]["sessionId"]
    second = subprocess.run(
        [*common, "--session", sid, "again"], capture_output=True, timeout=90, env=os.environ
    )
    assert second.returncode == 1
    [error] = [
        line for line in map(json.loads, second.stdout.splitlines()) if line["kind"] == "error"
    ]
    assert "rejected the request" in json.dumps(error) and "[redacted]" in json.dumps(error)
    for run in (first, second):
        assert_clean("run --json's stdout", run.stdout)
        assert_clean("run's stderr", run.stderr)
    assert_clean("the session store", store_bytes(store))
