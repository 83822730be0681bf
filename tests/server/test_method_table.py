"""The method table is declared once (rpc.methods names, rpc.types.METHOD_TYPES
their params and results); the server's handlers, its advertised capabilities and
the VS Code extension's method list are checked against it."""

from __future__ import annotations

import re
from pathlib import Path

from agent_host.rpc import methods
from agent_host.rpc.types import METHOD_TYPES
from agent_host.server.handlers import REQUEST_HANDLERS

TS_METHODS = Path(__file__).parents[2] / "editors" / "vscode" / "src" / "protocol" / "methods.ts"


def test_every_request_has_one_handler_and_types():
    assert list(REQUEST_HANDLERS) == list(methods.REQUESTS)
    for name in methods.REQUESTS:
        params, _ = METHOD_TYPES[name]
        assert params is not None, name
        # handlers are named functions a reader can find, not closures
        assert REQUEST_HANDLERS[name].__qualname__ == REQUEST_HANDLERS[name].__name__


def test_the_vscode_method_list_is_the_servers():
    text = TS_METHODS.read_text()
    constants = dict(re.findall(r"export const (\w+) = '([^']+)';", text))
    requests = re.search(r"export const REQUESTS = \[([^\]]*)\]", text)
    assert requests, "methods.ts has no REQUESTS list"
    names = [constants[c.strip()] for c in requests.group(1).split(",") if c.strip()]
    assert names == list(methods.REQUESTS)
    assert constants["CANCEL"] == methods.CANCEL
    assert constants["EVENT"] == methods.EVENT
    assert constants["REQUEST_PERMISSION"] == methods.REQUEST_PERMISSION
