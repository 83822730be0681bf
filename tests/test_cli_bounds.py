"""``agent-host run`` in CI ends, whatever the model or an MCP server does: a model
endpoint that sends only keep-alives fails the run, naming the bound and how to
change it; an MCP tool call never answered ends at its server's timeout and the
turn goes on. The real command, its serve child, a loopback OpenAI-compatible
server and the tests' MCP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from .session.mcp.conftest import APP
from .session.providers.fakes import FakeServer, keep_alive, openai_chunk

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_host", *args],
        capture_output=True,
        text=True,
        timeout=60,  # without the bounds, the keep-alives below last longer than this
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_run_fails_when_the_model_sends_only_keep_alives(tmp_path):
    server = FakeServer(
        [keep_alive([openai_chunk({"role": "assistant", "content": "Thinking"})], lasting=90)]
    ).start()
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "sk-test-x"}
    started = time.monotonic()
    try:
        done = run_cli(
            "run", "hi", "--model", "openai/m", "--model-timeout", "1",
            "--store", str(tmp_path / "store"), "--workspace", str(project), env=env,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - started < 45
    assert "the model sent nothing more for 1 s (model idle timeout; --model-timeout" in (
        done.stderr
    )


def test_run_rejects_a_bound_that_is_not_a_positive_number(tmp_path):
    done = run_cli("run", "hi", "--model-timeout", "0", "--store", str(tmp_path))
    assert done.returncode == 2 and "--model-timeout" in done.stderr


def test_run_ends_an_mcp_call_never_answered_and_goes_on(tmp_path):
    log = tmp_path / "server.log"
    config = tmp_path / "mcp.json"
    server = {
        "command": sys.executable,
        "args": [APP, "stdio"],
        "env": {"MCP_TEST_LOG": str(log)},
        # Confined, as by default, and let write its log outside the project.
        "sandbox": {"writable": [str(tmp_path)]},
    }
    config.write_text(json.dumps({"mcpServers": {"t": {**server, "timeout": 1000}}}))
    script = tmp_path / "script.json"
    steps = [
        {"tool_calls": [{"name": "mcp__t__slow", "arguments": {"seconds": 600}}]},
        {"text": "Gave up on it."},
    ]
    script.write_text(json.dumps({"steps": steps}))
    project = tmp_path / "project"
    project.mkdir()
    done = run_cli(
        "run", "call it", "--json", "--model", f"scripted:{script}", "--approve", "auto",
        "--mcp-config", str(config), "--store", str(tmp_path / "store"),
        "--workspace", str(project),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    outputs = [
        item["data"] for item in lines if "did not finish within 1 s" in json.dumps(item["data"])
    ]
    assert outputs, done.stdout
    [result] = [item["data"] for item in lines if item["kind"] == "result"]
    assert result["stopReason"] == "end_turn" and result["text"] == "Gave up on it."


@pytest.mark.exclusive
def test_run_tells_of_each_retry_and_names_the_flag_when_the_model_never_answers(tmp_path):
    from .session.providers.fakes import hang

    server = FakeServer([hang]).start()
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "sk-test-x"}
    env.pop("AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT", None)
    started = time.monotonic()
    try:
        done = run_cli(
            "run", "hi", "--model", "openai/m", "--model-first-byte-timeout", "1",
            "--model-retries", "1", "--store", str(tmp_path / "store"),
            "--workspace", str(project), env=env,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - started < 20
    lines = done.stderr.splitlines()
    assert any(
        line.startswith("agent-host: no answer from openai/m in 1 s; retry 1 of 1 in ")
        for line in lines
    ), done.stderr
    assert f"no answer from {server.url}/v1 within 1 s, 2 times" in done.stderr
    assert "--model-first-byte-timeout" in done.stderr
    assert len(server.received) == 2


def test_run_rejects_a_limit_for_an_unknown_provider(tmp_path):
    done = run_cli("run", "hi", "--model-retries", "olama=1", "--store", str(tmp_path))
    assert done.returncode == 2
    assert "--model-retries: unknown provider 'olama'" in done.stderr
