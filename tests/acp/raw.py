"""``agent-host acp`` on raw pipes: bytes in, stdout parsed strictly as one JSON-RPC
2.0 object per line -- anything else on stdout is recorded in ``violations``.
For what the SDK's client cannot send: lines that are no message at all."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.server.wire import assert_clean_error


class RawAgent:
    def __init__(
        self,
        workspace: Path,
        store: Path,
        model: str,
        launcher: tuple[str, ...] = (sys.executable, "-m", "agent_host"),
    ) -> None:
        self.proc = subprocess.Popen(
            [*launcher, "acp", "--store", str(store), "--model", model],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workspace,
        )
        self.messages: list[dict] = []
        self.violations: list[str] = []
        self.stderr = bytearray()
        self._ids = 0
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            with self._changed:
                if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                    self.violations.append(f"not a JSON-RPC 2.0 line: {line[:200]!r}")
                else:
                    self.messages.append(message)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(65536):
            self.stderr += chunk

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, method: str, params=None) -> int:
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self.write(json.dumps(message).encode() + b"\n")
        return self._ids

    def wait_for(self, match, timeout: float = 10.0) -> dict | None:
        """The first message ``match`` accepts, waiting up to ``timeout`` s for it."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for message in self.messages:
                    if match(message):
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    return None
                self._changed.wait(left)

    def response(self, msg_id, timeout: float = 10.0) -> dict | None:
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def call(self, method: str, params=None, timeout: float = 10.0) -> dict:
        answer = self.response(self.send(method, params), timeout)
        assert answer is not None, f"no answer to {method} within {timeout}s{self.state()}"
        return answer

    def state(self) -> str:
        tail = bytes(self.stderr[-3000:]).decode(errors="replace")
        return f"\nexit code: {self.proc.poll()}\nstderr tail:\n{tail}"

    def close(self, timeout: float = 30.0) -> int:
        """stdin closed (the client hangs up); the exit code. Killed if it stays."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"the agent outlived its client by {timeout}s{self.state()}"
            ) from None
        finally:
            self._reader.join(timeout)

    def assert_protocol_only(self) -> None:
        assert not self.violations, self.violations
        for message in self.messages:
            if "error" in message:
                assert_clean_error(message["error"])
