"""Bad input never kills the server, and every error it sends is a clean JSON-RPC error.

What the robustness tests (test_bad_requests.py, test_garbage_frames.py,
test_bad_initialize.py) share: the check that an error is clean, and
:class:`RawServer`, a subprocess fed raw bytes on stdin whose stdout is parsed
strictly as LSP frames, for garbage on the wire.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from .conftest import SERVER_COMMAND, write_script

INVALID_PARAMS = -32602
STARTUP_TIMEOUT = 60.0
"""How long a new server may take to answer ``initialize``: its imports alone take
seconds when CI's four test processes and tsc share two cores. A server that
exits fails at once (:meth:`RawServer.response` stops waiting); a hung one, after this."""
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")


def _texts(value) -> Iterator[str]:
    """Every key and string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def assert_clean_error(error: dict | JsonRpcException) -> None:
    """An error a user may see: no traceback, no source locations."""
    if isinstance(error, JsonRpcException):
        error = {"code": error.code, "message": error.message, "data": error.data}
    for text in _texts(error):
        assert not TRACEBACK.search(text), f"traceback in an error response: {error}"
        assert text.lower() != "traceback", f"traceback in an error response: {error}"


def status_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's memory figure from /proc: VmRSS now, VmHWM its peak."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


# -- LSP frames on a raw pipe


def frame(body: bytes | dict | list) -> bytes:
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


HEADER = re.compile(rb"([A-Za-z][A-Za-z-]*): ([^\r\n]*)")


class RawServer:
    """``agent-host serve`` on pipes; stdout is parsed as strict LSP frames.

    Anything on stdout that is not ``Header: value\\r\\n...\\r\\n`` + exactly
    Content-Length bytes of a JSON-RPC 2.0 object is recorded in ``violations``.
    """

    def __init__(self, cwd: Path | None = None, command: list[str] = SERVER_COMMAND) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )
        self.out = bytearray()
        self.stderr = bytearray()
        self.messages: list[dict] = []
        self.violations: list[str] = []
        self._pos = 0
        self._ids = 0
        self._changed = threading.Condition()
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- reading

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        while chunk := self.proc.stdout.read1(65536):
            with self._changed:
                self.out += chunk
                self._parse()
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(65536):
            self.stderr += chunk

    def _parse(self) -> None:
        while not self.violations:
            end = self.out.find(b"\r\n\r\n", self._pos)
            if end < 0:
                return
            headers = {}
            for line in bytes(self.out[self._pos : end]).split(b"\r\n"):
                match = HEADER.fullmatch(line)
                if not match:
                    self.violations.append(f"not a header line: {line[:200]!r}")
                    return
                headers[match[1].lower()] = match[2]
            length = headers.get(b"content-length", b"")
            if not length.isdigit():
                self.violations.append(f"no Content-Length in {headers}")
                return
            start = end + 4
            if len(self.out) < start + int(length):
                return
            body = bytes(self.out[start : start + int(length)])
            try:
                message = json.loads(body)
            except ValueError:
                self.violations.append(f"body is not JSON: {body[:200]!r}")
                return
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.violations.append(f"not a JSON-RPC 2.0 message: {body[:200]!r}")
                return
            self.messages.append(message)
            self._pos = start + int(length)

    # -- writing

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def next_id(self) -> str:
        self._ids += 1
        return f"raw-{self._ids}"

    def send(self, method: str, params=None, msg_id: str | None = None) -> str:
        msg_id = msg_id or self.next_id()
        self.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return msg_id

    def notify(self, method: str, params=None) -> None:
        self.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def response(self, msg_id, timeout: float = 10.0) -> dict | None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for message in self.messages:
                    if message.get("id") == msg_id and "method" not in message:
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self._threads[0].is_alive():
                    return None
                self._changed.wait(left)

    def call(self, method: str, params=None, timeout: float = 10.0) -> dict:
        msg_id = self.send(method, params)
        answer = self.response(msg_id, timeout)
        assert answer is not None, f"no answer to {method} within {timeout}s{self._state()}"
        return answer

    def initialize(
        self, root: Path, store: Path, model: str, timeout: float = STARTUP_TIMEOUT
    ) -> dict:
        answer = self.call(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {},
                "initializationOptions": {"store": str(store), "model": model, "approval": "auto"},
            },
            timeout,
        )
        self.notify("initialized", {})
        return answer

    def probe(self, attempts: int = 6, timeout: float = 0.6) -> dict:
        """A session/list answered: the server is alive and reading the wire again.

        Each probe starts with a line break, which ends whatever partial line the
        garbage left (the reader skips lines until a Content-Length header). A
        probe the garbage swallowed -- a Content-Length longer than its body takes
        the next message as the rest of the body -- is followed by another.
        """
        for _ in range(attempts):
            msg_id = self.next_id()
            request_ = {"jsonrpc": "2.0", "id": msg_id, "method": "session/list", "params": {}}
            self.write(b"\r\n" + frame(request_))
            answer = self.response(msg_id, timeout)
            if answer is not None:
                assert "result" in answer, answer
                assert isinstance(answer["result"]["sessions"], list)
                return answer
            assert self.proc.poll() is None, f"the server died{self._state()}"
        pytest.fail(f"the server stopped answering{self._state()}")

    def _state(self) -> str:
        return f"\nexit code: {self.proc.poll()}\nstderr tail:\n" + bytes(
            self.stderr[-3000:]
        ).decode(errors="replace")

    # -- the end

    def close(self, timeout: float = 10.0) -> int:
        """shutdown + exit; the exit code. Kills the server if it does not go."""
        if self.proc.poll() is None:
            try:
                answer = self.call("shutdown", None, timeout)
                assert "error" not in answer, answer
                self.notify("exit")
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        for thread in self._threads:
            thread.join(timeout)
        return code

    def assert_protocol_only(self) -> None:
        """Everything on stdout was whole frames, and no error carried a traceback."""
        assert not self.violations, self.violations
        assert self._pos == len(self.out), f"trailing bytes: {bytes(self.out[self._pos :])[:200]!r}"
        for message in self.messages:
            if "error" in message:
                assert_clean_error(message)


@contextmanager
def raw_server(tmp_path: Path, workspace: Path, steps=None) -> Iterator[RawServer]:
    model = write_script(tmp_path / "raw-script.json", steps or [{"text": "ok"}] * 200)
    server = RawServer()
    try:
        answer = server.initialize(workspace, tmp_path / "store", model)
        assert "agentHost" in answer["result"]["capabilities"]["experimental"]
        yield server
    finally:
        code = server.close()
    assert code == 0, f"exit code {code}{server._state()}"
    server.assert_protocol_only()
