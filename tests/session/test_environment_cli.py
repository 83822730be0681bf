"""``agent-host run --shell-env FILE``: the policy reaches the child server's
commands; a bad file is a usage error naming the field."""

from __future__ import annotations

import json
import os

import pytest

from ..test_cli import agent_host, common, project, script, store  # noqa: F401

pytestmark = pytest.mark.slow


def test_run_passes_the_policy_to_the_turns_commands(tmp_path, project, store, script):  # noqa: F811
    env_call = {"name": "run_command", "arguments": {"command": "env"}}
    model = script([{"tool_calls": [env_call]}, {"text": "Shown."}])
    policy = tmp_path / "env.json"
    policy.write_text(json.dumps({"include": ["MY_TOKEN"], "set": {"FROM_CLI": "yes"}}))
    environ = {**os.environ, "MY_TOKEN": "tok", "OPENAI_API_KEY": "sk-not-for-commands"}
    done = agent_host(
        "run", "env", "--approve", "auto", "--json", "--shell-env", str(policy),
        *common(store, project, model), env=environ,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "FROM_CLI=yes" in done.stdout and "MY_TOKEN=tok" in done.stdout
    assert "sk-not-for-commands" not in done.stdout


@pytest.mark.parametrize(
    "content, says",
    [
        ("{not json", "is not JSON"),
        ('{"set": {"X": 1}}', "env.json.set.X must be a string"),
        ('{"include": "A"}', "env.json.include must be a list"),
    ],
)
def test_a_bad_file_is_a_usage_error(tmp_path, project, store, content, says):  # noqa: F811
    policy = tmp_path / "env.json"
    policy.write_text(content)
    done = agent_host("run", "hi", "--shell-env", str(policy), *common(store, project))
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
