"""Issue 21 item 9: a store URL's password never reaches a log line -- not with -v,
where pygls logs the whole initialize request (``initialization_options=...``) the
``run`` client sends and the server receives, before any store is opened."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import secret_forms

pytestmark = pytest.mark.timeout(120)

STORE = f"postgresql://bob:{secret_forms.PASSWORD}@127.0.0.1:1/agent"
"""Port 1: nothing listens, the connection is refused -- after the URL was logged."""


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _agent_host(*args: str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_host", "-v", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=90,
    )


def _script(tmp_path: Path) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "ok"}]}))
    return f"scripted:{script}"


def test_serve_logs_no_store_password(tmp_path):
    options = {"store": STORE, "model": _script(tmp_path)}
    params = {"capabilities": {}, "rootUri": tmp_path.as_uri(), "initializationOptions": options}
    stdin = (
        frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        + frame({"jsonrpc": "2.0", "method": "exit"})
    )
    done = _agent_host("serve", cwd=tmp_path, stdin=stdin)
    assert b"initialization_options" in done.stderr  # -v logged the params ...
    assert b"[redacted]" in done.stderr
    assert secret_forms.leaks(done.stderr) == []  # ... without the password
    assert secret_forms.leaks(done.stdout) == []


def test_run_logs_no_store_password(tmp_path):
    done = _agent_host("run", "--store", STORE, "--model", _script(tmp_path), "hi", cwd=tmp_path)
    assert b"initializationOptions" in done.stderr  # the client's -v log of its request
    assert b"127.0.0.1:1" in done.stderr  # the error names the store ...
    assert secret_forms.leaks(done.stderr) == []  # ... and nothing shows its password
    assert secret_forms.leaks(done.stdout) == []
