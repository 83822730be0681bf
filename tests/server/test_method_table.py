"""The method table is declared once (rpc.methods.TABLE: each row's name, params
and result); the server's handlers, its advertised capabilities and the VS Code
extension's method list are checked against it."""

from __future__ import annotations

import re
from pathlib import Path

from agent_host.rpc import methods
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
