"""Every JSON-RPC message an agent sent, checked against the ACP v1 JSON schema the
official TypeScript SDK ships (``@agentclientprotocol/sdk`` as pinned by
tests/acp/node's lock file: ``schema/v1/schema.json``). The one checker of the
client tests: agent-shell, CodeCompanion, acpx, the TypeScript SDK client.

The schema's top level accepts any method as an extension (``ExtRequest``,
``ExtNotification`` and ``ExtResponse`` are unconstrained), so a malformed
``session/update`` would pass it. So each message is routed by its method, as the
SDK does, from the schema's own ``x-method``/``x-side`` marks: a request's or
notification's params against that method's type, a response against the response
type of the client request it answers (its id, from the client's side of the
traffic), an error against ``Error``; the JSON-RPC envelope against the schema's
``Agent`` message. Methods starting with ``_`` are extensions: ACP fixes only
their envelope.

Two ways in: :func:`check_log_dir` over tests/acp/wire_tap.py's transcripts (both
directions of a connection, in wire order), and :func:`problems` over the two
directions recorded apart (agent-shell's tee'd stdio).

The schema comes from a private ``npm ci`` of the lock file (:func:`schema_file`),
not tests/acp/node/node_modules, which test_node_client.py may be reinstalling in
another xdist worker at the same moment.
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

from jsonschema import Draft202012Validator

from ..node_toolchain import find_node, unavailable

NODE_SUITE = Path(__file__).resolve().parent / "node"
IN_SDK = Path("node_modules/@agentclientprotocol/sdk/schema/v1/schema.json")
NPM_CI_TIMEOUT = 300

Row = dict[str, str]
"""One line of a transcript: ``{"from": "client"|"agent", "line": TEXT}``."""


def schema_file() -> Path:
    """The SDK's v1 schema, from a private ``npm ci`` of tests/acp/node's lock file
    (or the test is unavailable: skipped, or failed when AGENT_HOST_REQUIRE_EDITORS=1).

    Private -- a folder in the temp dir named by the lock file's hash, made once per
    machine under a file lock -- so no other test's install of tests/acp/node can
    pull it from under a reader, and a changed lock file gets its own."""
    lock_file = NODE_SUITE / "package-lock.json"
    digest = hashlib.sha256(lock_file.read_bytes()).hexdigest()[:16]
    home = Path(tempfile.gettempdir()) / f"agent-host-acp-sdk-{digest}"
    schema = home / IN_SDK
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
                    unavailable(f"npm ci in {home} gave no {IN_SDK}:\n{done.stderr[-2000:]}")
    return schema


@cache
def _schema() -> dict[str, Any]:
    return json.loads(schema_file().read_text())


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": _schema()["$defs"], "$ref": f"#/$defs/{name}"})


@cache
def _envelope() -> Draft202012Validator:
    """Any message an agent may send, as the schema's top level has it."""
    agent = next(b for b in _schema()["anyOf"] if b.get("title") == "Agent")
    body = {k: v for k, v in agent.items() if k != "title"}
    return Draft202012Validator({"$defs": _schema()["$defs"], **body})


@cache
def _by_method() -> dict[tuple[str, str], str]:
    """(method, "request"|"notification"|"response") → the $defs type of what the
    agent sends: params of the methods the client handles, results of the agent's."""
    found: dict[tuple[str, str], str] = {}
    for name, spec in _schema()["$defs"].items():
        method, side = spec.get("x-method"), spec.get("x-side")
        if method is None:
            continue
        if side == "client" and name.endswith("Request"):
            found[(method, "request")] = name
        elif side == "client" and name.endswith("Notification"):
            found[(method, "notification")] = name
        elif side == "agent" and name.endswith("Response"):
            found[(method, "response")] = name
    return found


def _problems(name: str, value: Any) -> list[str]:
    return [
        f"{name} at /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
        for e in _validator(name).iter_errors(value)
    ]


def check(rows: Iterable[Row]) -> tuple[int, list[str]]:
    """(agent messages checked, what is wrong with them) for one connection's rows,
    in wire order; each problem starts ``agent message N``."""
    asked: dict[str, str] = {}  # the client's request ids (as JSON) → methods
    checked, wrong = 0, []
    for row in rows:
        try:
            message = json.loads(row["line"])
        except ValueError:
            if row["from"] == "agent":
                wrong.append(f"agent message {checked} ({row['line'][:200]!r}): not JSON")
                checked += 1
            continue
        if row["from"] == "client":
            if isinstance(message, dict) and "method" in message and "id" in message:
                asked[json.dumps(message["id"])] = message["method"]
            continue
        where = f"agent message {checked} ({json.dumps(message)[:200]})"
        wrong += [f"{where}: {p}" for p in _check_one(message, asked)]
        checked += 1
    return checked, wrong


def _check_one(message: Any, asked: dict[str, str]) -> list[str]:
    found = [f"JSON-RPC: {e.message[:300]}" for e in _envelope().iter_errors(message)]
    if not isinstance(message, dict):
        return found
    method = message.get("method")
    if isinstance(method, str):
        if method.startswith("_"):
            return found  # an extension: ACP fixes only its envelope
        kind = "request" if "id" in message else "notification"
        name = _by_method().get((method, kind))
        if name is None:
            return [*found, f"{method!r} is no ACP v1 {kind} an agent sends"]
        return found + _problems(name, message.get("params"))
    answered = asked.get(json.dumps(message.get("id")))
    if answered is None:
        return [*found, f"answers no request the client sent (id {message.get('id')!r})"]
    if "error" in message:
        return found + _problems("Error", message["error"])
    if answered.startswith("_"):
        return found
    name = _by_method().get((answered, "response"))
    if name is None:
        return [*found, f"answers {answered!r}, no ACP v1 method of the agent"]
    return found + _problems(name, message.get("result"))


def check_log_dir(log_dir: Path) -> tuple[int, list[str]]:
    """(agent messages checked, problems) over every wire_tap.py transcript in
    ``log_dir`` (one per connection)."""
    checked, wrong = 0, []
    for path in sorted(log_dir.glob("*.jsonl")):
        count, problems = check(json.loads(row) for row in path.read_text().splitlines())
        checked += count
        wrong += [f"{path.name}: {p}" for p in problems]
    return checked, wrong


def problems(sent: Iterable[Any], received: Iterable[Any]) -> list[str]:
    """What is wrong with each message of ``sent`` (the agent's, in order), given
    ``received`` (the client's, for the methods the responses answer), the two
    directions recorded apart: every client request is taken as asked before any
    answer."""
    rows = [{"from": "client", "line": json.dumps(m)} for m in received]
    rows += [{"from": "agent", "line": json.dumps(m)} for m in sent]
    return check(rows)[1]


def read_lines(path: Path) -> list[dict]:
    """The JSON-RPC messages of a newline-delimited stream, as recorded."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
