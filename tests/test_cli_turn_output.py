"""How ``agent-host run`` reports a turn's cost: a null (unknown) cost shows as
``$—``, never as ``$0.0000``; ``--json`` passes the null through."""

from __future__ import annotations

import json

from agent_host.cli.turn_output import JsonPrinter, TextPrinter

RESULT = {
    "sessionId": "s1",
    "checkpoint": 2,
    "stopReason": "end_turn",
    "text": "hi",
    "usage": {"inputTokens": 10, "outputTokens": 2},
    "cost": None,
    "totalCost": None,
}


def test_an_unknown_cost_shows_as_a_dash(capsys):
    TextPrinter().result(RESULT)
    err = capsys.readouterr().err
    assert err.rstrip().endswith("10 in / 2 out tokens, $—"), err
    assert "0.0000" not in err


def test_a_known_cost_shows_in_dollars(capsys):
    TextPrinter().result({**RESULT, "cost": 0.01234, "totalCost": 0.5})
    assert capsys.readouterr().err.rstrip().endswith("out tokens, $0.0123")


def test_json_output_keeps_an_unknown_cost_null(capsys):
    JsonPrinter().result(RESULT)
    line = json.loads(capsys.readouterr().out)
    assert line["kind"] == "result"
    assert line["data"]["cost"] is None and line["data"]["totalCost"] is None
