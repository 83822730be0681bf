"""The JSON Schema of the protocol, and docs/protocol.md, against the real thing.

- the schema is valid draft 2020-12, covers every method and type, and carries the
  field docstrings;
- values of every type, unstructured by the wire converter, validate against it;
- every message of a session recorded from a real server (docs/protocol_examples.py)
  validates, and so does every example in docs/protocol.md;
- docs/protocol.md names every request method and every error code.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types as pytypes
import typing
from pathlib import Path
from typing import Any, Literal, Union

import attrs
import pytest
from jsonschema import Draft202012Validator

from agent_host.rpc import methods
from agent_host.rpc import types as rpc
from agent_host.rpc.converter import camel, unstructure
from agent_host.rpc.errors import ErrorCode
from agent_host.rpc.schema import field_docstrings, protocol_schema
from agent_host.session import events as ev

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocol.md"
RECORDER = ROOT / "docs" / "protocol_examples.py"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return protocol_schema()


def validator(schema: dict[str, Any], ref: dict[str, str] | str) -> Draft202012Validator:
    if isinstance(ref, str):
        ref = {"$ref": f"#/$defs/{ref}"}
    return Draft202012Validator({**ref, "$defs": schema["$defs"]})


def errors(schema: dict[str, Any], ref: dict[str, str] | str, value: Any) -> list[str]:
    return [e.message for e in validator(schema, ref).iter_errors(value)]


# -- the schema itself


def test_the_schema_is_valid_and_every_ref_resolves(schema):
    Draft202012Validator.check_schema(schema)
    refs = re.findall(r'"\$ref": "#/\$defs/([^"]+)"', json.dumps(schema))
    assert refs and set(refs) <= set(schema["$defs"])
    # what `agent-host schema` prints is this document
    assert json.loads(json.dumps(schema)) == protocol_schema()


def test_every_method_is_there_with_its_types_and_direction(schema):
    assert set(schema["methods"]) == set(methods.TABLE)
    for name, params, result in ((m, m.params, m.result) for m in methods.TABLE):
        entry = schema["methods"][name]
        assert entry["params"] == {"$ref": f"#/$defs/{params.__name__}"}
        assert entry["result"] == (
            None if result is None else {"$ref": f"#/$defs/{result.__name__}"}
        )
        if name in methods.REQUESTS:
            assert (entry["direction"], entry["kind"]) == ("client->server", "request")
    assert schema["methods"][methods.CANCEL]["kind"] == "notification"
    event = schema["methods"][methods.EVENT]
    assert (event["direction"], event["kind"], event["result"]) == (
        "server->client",
        "notification",
        None,
    )
    assert schema["methods"][methods.REQUEST_PERMISSION]["direction"] == "server->client"
    assert schema["methods"][methods.REQUEST_PERMISSION]["kind"] == "request"


def test_every_attrs_type_has_one_definition(schema):
    types = [v for v in vars(rpc).values() if isinstance(v, type) and attrs.has(v)]
    assert {t.__name__ for t in types} <= set(schema["$defs"])
    assert set(schema["eventData"]) >= set(ev.EVENT_TYPES) | {"text_delta", "compaction_progress"}


def test_properties_are_camel_case_with_required_defaults_and_descriptions(schema):
    send = schema["$defs"]["SendParams"]
    assert send["required"] == ["prompt"]
    assert send["properties"]["sessionId"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
        "description": "Omitted: a new session.",
    }
    context = send["properties"]["context"]
    assert context["description"].startswith("Logged beside the prompt")
    assert {k: v for k, v in context.items() if k != "description"} == {
        "type": "array",
        "items": {"$ref": "#/$defs/ContextItem"},
        "default": [],
    }
    result = schema["$defs"]["SendResult"]
    assert result["properties"]["stopReason"] == {"$ref": "#/$defs/StopReason"}
    assert schema["$defs"]["StopReason"]["enum"] == list(typing.get_args(rpc.StopReason))
    assert result["properties"]["checkpoint"]["description"].startswith("Seq of this turn's prompt")
    assert result["properties"]["usage"] == {"$ref": "#/$defs/Usage"}
    options = schema["$defs"]["InitializationOptions"]
    assert options["description"].startswith("``initializationOptions`` of ``initialize``")
    assert "required" not in options
    assert options["properties"]["store"]["description"] == (
        "Session store URL: file:///dir, a directory, sqlite:///x.db or memory:.\n"
        "Default: the user data folder."
    )
    assert options["properties"]["approval"] == {
        "$ref": "#/$defs/Approval",
        "default": "ask",
        "description": "Which tool calls need the user's permission.",
    }
    permission = schema["$defs"]["PermissionParams"]["properties"]
    assert permission["kind"]["enum"] == ["edit", "command", "external"]
    assert permission["options"]["default"] == list(typing.get_args(rpc.Decision))
    assert schema["$defs"]["HistoryResult"]["properties"]["messages"] == {
        "type": "array",
        "items": {"type": "object"},
        "description": "OpenAI chat-format messages.",
    }
    # event data: the stored event, camelCased, every field present
    tool_call = schema["$defs"]["ToolCallEvent"]
    assert set(tool_call["required"]) == {"type", "seq", "ts", "callId", "name", "arguments"}
    assert tool_call["properties"]["type"] == {"const": "tool_call"}


def test_field_docstrings_come_from_the_class_source():
    docs = field_docstrings(rpc.RestoreParams)
    assert docs == {
        "seq": "A checkpoint's seq: the session returns to just before that prompt.",
        "force": "Overwrite files changed since the session last wrote them (conflicts).",
        "dry_run": "Write nothing: the result's ``preview`` says what the restore would do. A\n"
        "restore with the same ``paths`` and ``force`` then writes exactly that.",
        "paths": "Only these files (workspace-relative, as ``session/changes`` names them) are\n"
        "put back, the others left as they are; the conversation rewinds all the same.\n"
        "Each must be a file the session changed since the checkpoint.",
    }
    assert field_docstrings(rpc.SessionParams) == {}


# -- values through the wire converter


def sample(tp: Any, full: bool) -> Any:
    """A value of ``tp``: with every optional part filled (full) or left out."""
    if tp is Any:
        return {"any": [1, "two", None]}
    if tp in (str, int, float, bool):
        return {str: "text", int: 7, float: 0.25, bool: True}[tp]
    if isinstance(tp, type) and attrs.has(tp):
        hints = typing.get_type_hints(tp, vars(sys.modules[tp.__module__]))
        values = {}
        for field in attrs.fields(tp):
            if full or field.default is attrs.NOTHING:
                values[field.name] = sample(hints[field.name], full)
        return tp(**values)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return args[-1] if full else args[0]
    if origin in (Union, pytypes.UnionType):
        inner = [a for a in args if a is not type(None)]
        return sample(inner[0], full) if full or len(inner) == len(args) else None
    if origin is list:
        return [sample(args[0], full)] if full else []
    if origin is dict:
        return {"key": sample(args[1], full)}
    raise AssertionError(f"no sample for {tp}")


RPC_TYPES = [v for v in vars(rpc).values() if isinstance(v, type) and attrs.has(v)]


@pytest.mark.parametrize("full", [True, False], ids=["full", "minimal"])
@pytest.mark.parametrize("cls", RPC_TYPES, ids=lambda c: c.__name__)
def test_unstructured_values_validate(schema, cls, full):
    value = unstructure(sample(cls, full))
    assert errors(schema, cls.__name__, value) == []
    # minimal: only what is required, still valid
    required = schema["$defs"][cls.__name__].get("required", [])
    assert errors(schema, cls.__name__, {k: value[k] for k in required}) == []


@pytest.mark.parametrize("cls", list(ev.EVENT_TYPES.values()), ids=lambda c: c.type)
def test_event_data_validates(schema, cls):
    event = ev.stamp(sample(cls, True), seq=4, ts=1795977614.5)
    data = {camel(k): v for k, v in ev.to_dict(event).items()}
    assert errors(schema, schema["eventData"][cls.type], data) == []
    assert errors(schema, schema["eventData"][cls.type], {**data, "type": "other"})


def test_invalid_values_are_rejected(schema):
    good = unstructure(rpc.SendResult("s1", 2, "end_turn", "hi", rpc.Usage(1, 2), 0.0, 0.0))
    assert errors(schema, "SendResult", good) == []
    assert errors(schema, "SendResult", {**good, "stopReason": "done"})
    assert errors(schema, "SendResult", {**good, "checkpoint": "2"})
    assert errors(schema, "SendResult", {k: v for k, v in good.items() if k != "sessionId"})
    assert errors(schema, "SendResult", {**good, "usage": {"inputTokens": 1}})
    assert errors(schema, "SendParams", {"prompt": "hi", "context": [{"uri": "file:///a"}]})
    assert errors(schema, "InitializationOptions", {"approval": "sometimes"})
    # unknown properties are allowed: newer peers may add some
    assert errors(schema, "SendParams", {"prompt": "hi", "future": 1}) == []


# -- real traffic and the documentation


class Conversation:
    """Checks JSON-RPC messages against the schema, pairing responses with requests."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.pending: dict[Any, str] = {}
        self.invalid_requests: list[dict[str, Any]] = []
        self.checked: set[str] = set()

    def check(self, message: dict[str, Any]) -> None:
        assert message.get("jsonrpc") == "2.0", message
        method = message.get("method")
        entry = self.schema["methods"].get(method)
        if method is not None:
            if "id" in message:
                self.pending[message["id"]] = method
            if entry is None:
                return  # LSP's own (initialize, $/progress, ...) or an unknown method
            assert entry["kind"] == ("request" if "id" in message else "notification")
            problems = errors(self.schema, entry["params"], message.get("params"))
            if problems:
                self.invalid_requests.append(message)  # must be answered with -32602
            self.checked.add(method)
            if method == methods.EVENT and not problems:
                params = message["params"]
                data_ref = self.schema["eventData"].get(params["kind"])
                assert data_ref is not None, f"an event kind the schema lacks: {params['kind']}"
                assert errors(self.schema, data_ref, params["data"]) == [], message
                self.checked.add(f"event:{params['kind']}")
            return
        method = self.pending.pop(message["id"])
        if "error" in message:
            code = message["error"]["code"]
            assert code in {int(c) for c in ErrorCode}, message
            if code == ErrorCode.INVALID_PARAMS:
                self.invalid_requests = [
                    m for m in self.invalid_requests if m.get("id") != message["id"]
                ]
            return
        if method == "initialize":
            advertised = message["result"]["capabilities"]["experimental"]["agentHost"]
            assert advertised["protocolVersion"] == self.schema["protocolVersion"]
            mine = {
                m for m, e in self.schema["methods"].items() if e["direction"] == "client->server"
            }
            assert set(advertised["methods"]) == mine
            return
        entry = self.schema["methods"].get(method)
        if entry is None:
            return
        if entry["result"] is None:
            assert message["result"] is None, message
        else:
            assert errors(self.schema, entry["result"], message["result"]) == [], message
        self.checked.add(f"{method} result")

    def done(self) -> None:
        assert self.invalid_requests == [], "invalid params that were not answered -32602"


@pytest.mark.slow
def test_a_recorded_session_validates_against_the_schema(schema, tmp_path):
    recorded = subprocess.run(
        [sys.executable, str(RECORDER), "--root", str(tmp_path / "example"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert recorded.returncode == 0, recorded.stderr
    conversation = Conversation(schema)
    entries = [json.loads(line) for line in recorded.stdout.splitlines()]
    for entry in entries:
        conversation.check(entry["message"])
    conversation.done()
    assert {f"{m} result" for m in methods.REQUESTS} <= conversation.checked
    assert {methods.CANCEL, methods.EVENT, methods.REQUEST_PERMISSION} <= conversation.checked
    codes = {e["message"]["error"]["code"] for e in entries if "error" in e["message"]}
    assert codes == {-32602, -32601, -32800, -32001, -32002, -32003, -32004, -32006, -32007, -32009}


def doc_messages() -> list[dict[str, Any]]:
    """Every JSON-RPC message in a ```json or ```jsonl block of protocol.md, in order."""
    found = []
    for lang, body in re.findall(r"```(jsonl?)\n(.*?)```", DOC.read_text(), flags=re.S):
        values = (
            [json.loads(body)] if lang == "json" else [json.loads(x) for x in body.splitlines()]
        )
        found += [v for v in values if isinstance(v, dict) and "jsonrpc" in v]
    return found


def test_every_example_in_the_doc_validates(schema):
    messages = doc_messages()
    assert len(messages) > 40
    conversation = Conversation(schema)
    for message in messages:
        conversation.check(message)
    conversation.done()
    assert {f"{m} result" for m in methods.REQUESTS} <= conversation.checked
    assert {methods.CANCEL, methods.REQUEST_PERMISSION} <= conversation.checked


def test_the_doc_names_every_method_and_error_code():
    text = DOC.read_text()
    for method in [*methods.REQUESTS, methods.CANCEL, methods.EVENT, methods.REQUEST_PERMISSION]:
        assert f"### {method}" in text, f"docs/protocol.md has no section for {method}"
    for code in ErrorCode:
        row = re.search(rf"^\| {int(code)} \| `{code.name}` \| .+$", text, flags=re.M)
        assert row, f"docs/protocol.md's error table lacks {int(code)} {code.name}"
    for kind in (
        "text_delta",
        "user_prompt",
        "assistant_message",
        "tool_call",
        "tool_result",
        "file_snapshot",
        "usage",
        "turn_end",
        "compaction_progress",
    ):
        assert f"| `{kind}` |" in text
