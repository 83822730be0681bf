"""How ``agent-host run`` reports a turn's cost: a null (unknown) cost shows as
``$—``, never as ``$0.0000``; ``--json`` passes the null through. The printers
alone, then the real command against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from agent_host.cli.turn_output import JsonPrinter, TextPrinter

from .session.providers.fakes import OPENAI_DONE, FakeServer, openai_chunk, sse

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


def test_a_model_without_a_price_shows_an_unknown_cost_end_to_end(tmp_path):
    # agent-host run, its serve child and a loopback OpenAI-compatible server; the
    # model is in no price table and the server reports no cost
    server = FakeServer(
        [
            sse(
                [
                    openai_chunk({"role": "assistant", "content": "Hello."}),
                    openai_chunk(finish="stop"),
                    openai_chunk(usage=(100, 5)),
                    OPENAI_DONE,
                ]
            )
        ]
    ).start()
    project = tmp_path / "project"
    project.mkdir()
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.url + "/v1",
        "OPENAI_API_KEY": "sk-test-cli-cost",
    }
    common = ["--store", str(tmp_path / "store"), "--workspace", str(project)]
    try:
        text = run_cli("run", "hi", "--model", "openai/unpriced-model", *common, env=env)
        as_json = run_cli(
            "run", "hi", "--json", "--model", "openai/unpriced-model", *common, env=env
        )
    finally:
        server.stop()
    assert text.returncode == 0, text.stderr
    assert "Hello." in text.stdout
    assert "out tokens, $—" in text.stderr and "$0.0000" not in text.stderr
    assert "$—" not in text.stdout  # the summary goes to stderr, the answer to stdout
    [result] = [
        json.loads(line)["data"]
        for line in as_json.stdout.splitlines()
        if json.loads(line)["kind"] == "result"
    ]
    assert result["cost"] is None and result["totalCost"] is None


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_host", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
