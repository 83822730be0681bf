"""Every message an agent sent, checked against the ACP v1 JSON schema shipped in the
npm SDK (``@agentclientprotocol/sdk``'s ``schema/v1/schema.json``, installed by
``npm ci`` in tests/acp/node).

The transcripts are those tests/acp/wire_tap.py writes: both directions, so a
response is checked against the schema of the request it answers (the client's
``session/new`` → ``NewSessionResponse``), a request or notification the agent sent
against its method's params, an error against ``Error``. Extension methods
(``_agent-host/...``) are checked as JSON-RPC only: ACP leaves their shapes open.

Self-contained (jsonschema and the standard library): the Emacs tests have their
own copy of the idea in tests/editors/acp_schema.py.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ..node_toolchain import find_node, unavailable

NODE_SUITE = Path(__file__).resolve().parent / "node"
SDK = NODE_SUITE / "node_modules" / "@agentclientprotocol" / "sdk"
SCHEMA = SDK / "schema" / "v1" / "schema.json"


def ensure_schema() -> None:
    """The SDK (and so its schema) installed in tests/acp/node: ``npm ci`` when it is
    missing; skipped without npm (failed when AGENT_HOST_REQUIRE_EDITORS=1)."""
    if SCHEMA.is_file():
        return
    _node, npm, why = find_node(18)
    if npm is None:
        unavailable(f"the ACP schema comes from the npm SDK; npm is missing: {why}")
        return
    done = subprocess.run(
        [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"],
        cwd=NODE_SUITE,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 or not SCHEMA.is_file():
        pytest.fail(
            f"npm ci in {NODE_SUITE} gave no {SCHEMA}:\n{done.stderr[-4000:]}", pytrace=False
        )


@cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text())


@cache
def _validator(name: str) -> Draft202012Validator:
    root = _schema()
    return Draft202012Validator({"$defs": root["$defs"], "$ref": f"#/$defs/{name}"})


@cache
def _by_method() -> dict[tuple[str, str], str]:
    """(method, "request"|"notification"|"response") → the $defs entry for what the
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
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
        for e in _validator(name).iter_errors(value)
    ]


def check_log_dir(log_dir: Path) -> tuple[int, list[str]]:
    """(how many agent messages were checked, what is wrong with them) over every
    transcript under ``log_dir``."""
    checked, wrong = 0, []
    for path in sorted(log_dir.glob("*.jsonl")):
        rows = [json.loads(row) for row in path.read_text().splitlines()]
        count, problems = check(rows)
        checked += count
        wrong += [f"{path.name}: {p}" for p in problems]
    return checked, wrong


def check(rows: list[dict[str, str]]) -> tuple[int, list[str]]:
    """(agent messages checked, problems) for one connection's rows, in wire order."""
    asked: dict[Any, str] = {}  # the client's request ids → methods
    checked, wrong = 0, []
    for row in rows:
        try:
            message = json.loads(row["line"])
        except ValueError:
            if row["from"] == "agent":
                wrong.append(f"not JSON: {row['line'][:200]!r}")
            continue
        if row["from"] == "client":
            if isinstance(message, dict) and "method" in message and "id" in message:
                asked[message["id"]] = message["method"]
            continue
        checked += 1
        where = json.dumps(message)[:240]
        wrong += [f"{p} in {where}" for p in _check_one(message, asked)]
    return checked, wrong


def _check_one(message: Any, asked: dict[Any, str]) -> list[str]:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return ['not a JSON-RPC 2.0 object ("jsonrpc": "2.0")']
    method = message.get("method")
    if method is not None:
        kind = "request" if "id" in message else "notification"
        if method.startswith("_"):
            return []  # an extension: ACP fixes only its envelope
        name = _by_method().get((method, kind))
        if name is None:
            return [f"{method} is no ACP v1 {kind} an agent sends"]
        return _problems(name, message.get("params"))
    if "id" not in message:
        return ["neither a request, a notification nor a response"]
    if "error" in message:
        return _problems("Error", message["error"])
    if "result" not in message:
        return ["a response with neither result nor error"]
    answered = asked.get(message["id"])
    if answered is None:
        return [f"a response to id {message['id']!r}, which the client never asked"]
    if answered.startswith("_"):
        return []
    name = _by_method().get((answered, "response"))
    if name is None:
        return [f"a result for {answered}, which is no ACP v1 method of the agent"]
    return _problems(name, message["result"])
