"""Every JSON-RPC message an agent sent, checked against the ACP v1 JSON schema that
the official TypeScript SDK ships (``@agentclientprotocol/sdk`` 2.4.0, as pinned by
tests/acp/node's lock file: ``schema/v1/schema.json``).

The schema's top level accepts any method as an extension (``ExtRequest``,
``ExtNotification`` and ``ExtResponse`` are unconstrained), so a malformed
``session/update`` would pass it. The check here routes each message by its method,
as the SDK does (its ``CLIENT_METHODS`` and ``AGENT_METHODS``): a request's or
notification's params against that method's type, a response against the type of
the client request it answers (its id, from the client's side of the traffic), an
error against ``Error``. Methods starting with ``_`` are extensions, free-form by
the spec. Self-contained: the Emacs tests use it; other client tests may copy it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from ..node_toolchain import find_node, unavailable

NODE_SUITE = Path(__file__).resolve().parents[1] / "acp" / "node"
SCHEMA = "node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"
NPM_CI_TIMEOUT = 300

AGENT_REQUESTS = {
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/release": "ReleaseTerminalRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "elicitation/create": "CreateElicitationRequest",
}
"""What an agent may ask a client (the SDK's v1 ``CLIENT_METHODS`` requests)."""

AGENT_NOTIFICATIONS = {
    "session/update": "SessionNotification",
    "elicitation/complete": "CompleteElicitationNotification",
}

RESPONSES = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "logout": "LogoutResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/delete": "DeleteSessionResponse",
    "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
}
"""The agent's answer to each v1 method a client calls (the SDK's ``AGENT_METHODS``)."""


def schema_file() -> Path:
    """The SDK's v1 schema, from a private ``npm ci`` of tests/acp/node's lock file (or
    the test is unavailable: skipped, or failed on CI).

    Private -- a folder in the temp dir named by the lock file's hash, made once per
    machine -- because tests/acp/test_node_client.py may be re-installing
    tests/acp/node/node_modules in another test worker at the same moment."""
    lock_file = NODE_SUITE / "package-lock.json"
    digest = hashlib.sha256(lock_file.read_bytes()).hexdigest()[:16]
    home = Path(tempfile.gettempdir()) / f"agent-host-acp-sdk-{digest}"
    schema = home / SCHEMA
    if schema.is_file():
        return schema
    _node, npm, why = find_node(18)
    if npm is None:
        unavailable(f"the ACP v1 schema comes from the npm SDK, and npm is missing: {why}")
    assert npm is not None
    with open(f"{home}.lock", "a") as held:  # one install at a time on this machine
        fcntl.flock(held, fcntl.LOCK_EX)
        if not schema.is_file():
            home.mkdir(exist_ok=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(NODE_SUITE / name, home / name)
            env = {**os.environ, "npm_config_update_notifier": "false"}
            try:
                done = subprocess.run(
                    [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"],
                    cwd=home,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=NPM_CI_TIMEOUT,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                unavailable(f"npm ci in {home} failed: {exc}")
            else:
                if done.returncode != 0 or not schema.is_file():
                    unavailable(f"npm ci in {home} failed:\n{done.stderr[-2000:]}")
    return schema


class AcpSchema:
    """The v1 schema's types, each as a validator."""

    def __init__(self, path: Path) -> None:
        import jsonschema  # the test extra's

        self._validators = jsonschema.Draft202012Validator
        self._document = json.loads(path.read_text())
        self._defs = self._document["$defs"]
        agent = next(b for b in self._document["anyOf"] if b.get("title") == "Agent")
        self._agent = self._of({k: v for k, v in agent.items() if k != "title"})
        self._types: dict[str, Any] = {}

    def _of(self, schema: dict) -> Any:
        return self._validators({"$defs": self._defs, **schema})

    def _type(self, name: str) -> Any:
        if name not in self._types:
            self._types[name] = self._of({"$ref": f"#/$defs/{name}"})
        return self._types[name]

    def _problems(self, name: str, value: Any, what: str) -> list[str]:
        return [
            f"{what}: {name} at /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
            for e in self._type(name).iter_errors(value)
        ]

    def problems(self, sent: Iterable[dict], received: Iterable[dict]) -> list[str]:
        """What is wrong with each message of ``sent`` (the agent's, in order), given
        ``received`` (the client's, for the methods the responses answer)."""
        asked = {
            json.dumps(m["id"]): m["method"]
            for m in received
            if isinstance(m, dict) and "method" in m and "id" in m
        }
        found: list[str] = []
        for index, message in enumerate(sent):
            what = f"message {index} ({json.dumps(message)[:160]})"
            found += [f"{what}: {e.message[:300]}" for e in self._agent.iter_errors(message)]
            if not isinstance(message, dict):
                continue
            method = message.get("method")
            if isinstance(method, str):
                if method.startswith("_"):
                    continue  # an extension: free-form
                table = AGENT_REQUESTS if "id" in message else AGENT_NOTIFICATIONS
                if method not in table:
                    found.append(f"{what}: {method!r} is no ACP v1 agent-to-client method")
                else:
                    found += self._problems(table[method], message.get("params"), what)
                continue
            answered = asked.get(json.dumps(message.get("id")))
            if answered is None:
                found.append(f"{what}: answers no request the client sent")
            elif "error" in message:
                found += self._problems("Error", message["error"], what)
            elif answered.startswith("_"):
                continue
            elif answered not in RESPONSES:
                found.append(f"{what}: answers {answered!r}, no ACP v1 method")
            else:
                found += self._problems(RESPONSES[answered], message.get("result"), what)
        return found


@cache
def acp_schema() -> AcpSchema:
    return AcpSchema(schema_file())


def read_lines(path: Path) -> list[dict]:
    """The JSON-RPC messages of a newline-delimited stream, as recorded."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
