"""Errors in one place: every engine error type has a kind in the service's table,
each front end gives every kind its code, and a ValueError nobody raised on
purpose is an internal error on both front ends -- never "invalid params"."""

from __future__ import annotations

import errno
import importlib
import json
import logging
import pkgutil
import sys

import pytest
from pydantic import BaseModel, ValidationError

import agent_host
from agent_host.acp.errors import CODES as ACP_CODES
from agent_host.acp.errors import to_request_error
from agent_host.rpc.converter import InvalidParams
from agent_host.server.protocol import CODES as LSP_CODES
from agent_host.server.protocol import to_wire
from agent_host.service.errors import ErrorKind, describe, kind_of
from agent_host.session import errors
from agent_host.session.workspace.listing import GLOB_EXPANSION_LIMIT, compile_glob
from tests.acp.raw import RawAgent
from tests.server.wire import STARTUP_TIMEOUT, RawServer, assert_clean_error

CLIENT_SIDE = {"agent_host.client"}
"""Errors of the Python client of ``agent-host serve``: raised in the caller's
process from the server's answers, never by an engine to a front end."""


def _import_every_module() -> None:
    for module in pkgutil.walk_packages(agent_host.__path__, "agent_host."):
        if module.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed (agents, postgres)
            pass


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_subclasses(sub)}
    return found


def test_every_engine_error_type_has_a_kind():
    _import_every_module()
    engine_errors = {
        cls
        for cls in _subclasses(errors.AgentHostError)
        if cls.__module__.startswith("agent_host.") and cls.__module__ not in CLIENT_SIDE
    }
    assert len(engine_errors) > 30, sorted(c.__name__ for c in engine_errors)
    unmapped = sorted(f"{c.__module__}.{c.__qualname__}" for c in engine_errors if not kind_of(c))
    assert not unmapped, f"error types with no row in service/errors.py KINDS: {unmapped}"


def test_an_error_type_without_a_row_is_internal_whatever_it_derives_from():
    class Unlisted(errors.AgentHostError, ValueError):
        pass

    # The base has no row, so a new type is not quietly given one.
    assert kind_of(errors.AgentHostError) is None
    assert describe(Unlisted("the caller's?")).kind is ErrorKind.INTERNAL
    assert describe(ValueError("a bug")).kind is ErrorKind.INTERNAL
    assert describe(KeyError("k")).kind is ErrorKind.INTERNAL


def test_each_front_end_gives_every_kind_a_code_grouped_alike():
    assert set(LSP_CODES) == set(ErrorKind)
    assert set(ACP_CODES) == set(ErrorKind)

    def groups(table: dict[ErrorKind, int]) -> set[frozenset[ErrorKind]]:
        shared: dict[int, set[ErrorKind]] = {}
        for kind, code in table.items():
            shared.setdefault(int(code), set()).add(kind)
        return {frozenset(kinds) for kinds in shared.values()}

    # The numbers differ (ACP's own codes); which kinds a client can tell apart do not.
    assert groups({kind: int(code) for kind, code in LSP_CODES.items()}) == groups(ACP_CODES)


def test_acps_codes_are_acps_own_or_outside_the_range_acp_claims():
    acps_own = {
        ErrorKind.INVALID_PARAMS: -32602,
        ErrorKind.INTERNAL: -32603,
        ErrorKind.SESSION_NOT_FOUND: -32002,  # "Resource not found"
    }
    for kind, code in ACP_CODES.items():
        if kind in acps_own:
            assert code == acps_own[kind], kind
        else:
            # ACP's errors use -32000..-32099 (it added -32022 in v2); JSON-RPC's
            # own are -32768..-32000: ours are in neither.
            assert not -32768 <= code <= -32000, (kind, code)
    assert ACP_CODES[ErrorKind.CHECKPOINT_CONFLICT] != ACP_CODES[ErrorKind.SESSION_NOT_FOUND]


def test_what_describe_says():
    invalid = describe(errors.InvalidArgument("limit: must be 1 or more"))
    assert invalid.kind is ErrorKind.INVALID_PARAMS
    assert invalid.message == "limit: must be 1 or more"
    assert invalid.data == {"error": "InvalidArgument"}
    assert describe(InvalidParams("sessionId: expected a string")).kind is ErrorKind.INVALID_PARAMS
    assert describe(errors.WorkspaceMismatch("elsewhere")).kind is ErrorKind.WORKSPACE_MISMATCH
    assert describe(errors.CorruptLogError("torn")).kind is ErrorKind.CORRUPT_STORE
    disk = describe(OSError(errno.ENOSPC, "No space left on device", "/w/a.py"))
    assert (disk.kind, disk.message) == (ErrorKind.OS_ERROR, "No space left on device: /w/a.py")
    assert describe(TimeoutError()).message == "TimeoutError"
    bug = describe(ValueError("secret detail of a bug"))
    assert bug.message == "internal error (ValueError)" and bug.data is None


def test_a_valueerror_from_a_bug_is_internal_on_both_front_ends(caplog):
    caplog.set_level(logging.ERROR)
    bug = ValueError("a bug, not the caller's mistake")
    lsp = to_wire(bug)
    assert lsp.code == -32603
    assert lsp.message == "internal error (ValueError); the server log has the details"
    acp = to_request_error(bug)
    assert acp.code == -32603
    assert str(acp) == "internal error (ValueError); the agent's stderr has the details"
    logged = [r for r in caplog.records if r.exc_info and r.exc_info[1] is bug]
    assert len(logged) == 2, "each front end logs the traceback of what it hid"

    class Schema(BaseModel):
        n: int

    with pytest.raises(ValidationError) as built_wrong:
        Schema.model_validate({"n": "x"})
    # A schema value the agent built wrong is its own bug too.
    assert to_request_error(built_wrong.value).code == -32603


def test_the_callers_mistakes_keep_their_codes():
    for exc in (
        errors.InvalidArgument("prompt must be a non-empty string"),
        errors.InvalidSessionId("bad id"),
        errors.McpConfigError("mcpServers[0].command must be a string"),
    ):
        assert to_wire(exc).code == -32602
        assert to_request_error(exc).code == -32602
        assert to_wire(exc).message == str(exc) == str(to_request_error(exc))
    assert to_wire(errors.SessionNotFound("s")).code == -32001
    # ACP's own -32002 "Resource not found" (the SDKs read it as an unknown session).
    assert to_request_error(errors.SessionNotFound("s")).code == -32002


# A bug planted in a real process: SessionService.list raises a plain ValueError
# when asked for the cursor "bug", and works as shipped for any other.
PLANT_A_BUG = """
import sys
from agent_host.service import sessions
from agent_host.cli import main

shipped = sessions.SessionService.list

async def list_with_a_bug(self, *, cwd=None, cursor=None, limit=None):
    if cursor == "bug":
        raise ValueError("a bug in list, not the caller's mistake")
    return await shipped(self, cwd=cwd, cursor=cursor, limit=limit)

sessions.SessionService.list = list_with_a_bug
raise SystemExit(main())
"""
LAUNCHER = (sys.executable, "-c", PLANT_A_BUG)


@pytest.fixture
def model(tmp_path) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "ok"}]}))
    return f"scripted:{script}"


def test_a_bugs_valueerror_through_agent_host_serve(tmp_path, model):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = RawServer(command=[*LAUNCHER, "serve"])
    try:
        server.initialize(workspace, tmp_path / "store", model)
        bug = server.call("session/list", {"cursor": "bug"})["error"]
        assert bug["code"] == -32603, bug
        assert bug["message"] == "internal error (ValueError); the server log has the details"
        assert_clean_error(bug)
        mistake = server.call("session/list", {"cursor": "nope"})["error"]
        assert mistake["code"] == -32602 and "cursor" in mistake["message"], mistake
        nul = server.call("session/list", {"workspace": "a\x00b"})["error"]
        assert nul["code"] == -32602 and "workspace" in nul["message"], nul
        assert "result" in server.call("session/list", {})
    finally:
        server.close()
    stderr = bytes(server.stderr).decode(errors="replace")
    assert "Traceback" in stderr and "a bug in list, not the caller's mistake" in stderr


def test_a_bugs_valueerror_through_agent_host_acp(tmp_path, model):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    agent = RawAgent(workspace, tmp_path / "store", model, launcher=LAUNCHER)
    try:
        assert "result" in agent.call("initialize", {"protocolVersion": 1}, STARTUP_TIMEOUT)
        bug = agent.call("session/list", {"cursor": "bug"})["error"]
        assert bug["code"] == -32603, bug
        assert bug["message"] == "internal error (ValueError); the agent's stderr has the details"
        mistake = agent.call("session/list", {"cursor": "nope"})["error"]
        assert mistake["code"] == -32602 and "cursor" in mistake["message"], mistake
        agent.assert_protocol_only()
    finally:
        agent.close()
    stderr = bytes(agent.stderr).decode(errors="replace")
    assert "Traceback" in stderr and "a bug in list, not the caller's mistake" in stderr


@pytest.mark.parametrize("pattern", ["{a,b}" * 11, "src/{1..2000}.py"])
def test_a_glob_whose_braces_expand_too_far_says_so(pattern):
    with pytest.raises(errors.ToolError) as caught:
        compile_glob(pattern)
    message = str(caught.value)
    assert message.startswith(f"invalid glob pattern {pattern!r}: ")
    assert f"braces expand to more than {GLOB_EXPANSION_LIMIT:,} patterns" in message
