"""The method table is declared once (rpc.methods.TABLE: each row's name, params
and result); the server's handlers, its advertised capabilities and the VS Code
extension's method list are checked against it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_host.rpc import methods
from agent_host.server.app import create_server
from agent_host.server.handlers import HANDLERS

TS_METHODS = (
    Path(__file__).parents[2] / "editors" / "vscode" / "src" / "protocol" / "wire.generated.ts"
)


def test_every_request_has_one_handler_and_types():
    REQUEST_HANDLERS = {m: h for m, h in HANDLERS.items() if m.kind == "request"}
    assert list(REQUEST_HANDLERS) == list(methods.REQUESTS)
    for name in methods.REQUESTS:
        params = name.params
        assert params is not None, name
        # handlers are named functions a reader can find, not closures
        assert REQUEST_HANDLERS[name].__qualname__ == REQUEST_HANDLERS[name].__name__


def test_every_client_method_has_a_handler_and_nothing_else_does():
    client = [m for m in methods.TABLE if m.direction == methods.CLIENT_TO_SERVER]
    assert sorted(HANDLERS) == sorted(client)
    assert methods.CANCEL in HANDLERS


def test_a_row_without_a_handler_stops_the_server_from_starting(monkeypatch):
    monkeypatch.delitem(HANDLERS, methods.CLOSE)
    with pytest.raises(LookupError, match="session/close"):
        create_server()


def test_initialize_advertises_the_tables_methods():
    advertised = methods.advertised()
    assert advertised["methods"] == [*methods.REQUESTS, methods.CANCEL]
    assert advertised["notifications"] == [methods.EVENT]
    assert advertised["clientRequests"] == [methods.REQUEST_PERMISSION]


def test_the_vscode_method_list_is_the_servers():
    text = TS_METHODS.read_text()
    constants = dict(re.findall(r"export const (\w+) = '([^']+)';", text))
    requests = re.search(r"export const REQUESTS = \[([^\]]*)\]", text)
    assert requests, "wire.generated.ts has no REQUESTS list"
    names = [constants[c.strip()] for c in requests.group(1).split(",") if c.strip()]
    assert names == list(methods.REQUESTS)
    assert constants["CANCEL"] == methods.CANCEL
    assert constants["EVENT"] == methods.EVENT
    assert constants["REQUEST_PERMISSION"] == methods.REQUEST_PERMISSION


ARCHITECTURE = Path(__file__).parents[2] / "docs" / "architecture.md"


def test_the_architecture_docs_example_is_the_real_code():
    """docs/architecture.md shows adding session/close as a diff: what it adds is
    in the files it names, as it is written there."""
    section = ARCHITECTURE.read_text().split("## Adding a wire method", 1)[1]
    python_diff = section.split("```diff\n", 1)[1].split("```", 1)[0]
    hunks = re.split(r"^\+\+\+ b/(\S+)\n", python_diff, flags=re.M)[1:]
    assert len(hunks) == 6, "the example shows the table, the service and the handler"
    for path, body in zip(hunks[::2], hunks[1::2], strict=True):
        source = (ARCHITECTURE.parents[1] / path).read_text()
        added = "\n".join(line[1:] for line in body.splitlines() if line.startswith("+"))
        assert added.strip() in source, (
            f"docs/architecture.md's example diff no longer matches {path}: refresh it"
        )
