"""The shell environment policy: what of os.environ commands see, through the
workspace, the host and the server's initializationOptions."""

from __future__ import annotations

import json

import pytest

from agent_host.session.environment import (
    DEFAULT_POLICY,
    EnvironmentPolicy,
    ShellEnvironmentError,
    as_policy,
    using_policy,
)
from agent_host.session.host import AgentHost
from agent_host.session.workspace import DiskWorkspace

ENVIRON = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "PLAIN_SETTING": "kept",
    "OPENAI_API_KEY": "sk-test-openai",
    "anthropic_api_key": "sk-test-anthropic",
    "MY_TOKEN": "tok",
    "DB_PASSWORD": "pw",
    "AWS_SECRET_ACCESS_KEY": "s",
    "GITHUB_TOKEN": "gh",
    "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
    "LITELLM_PROXY_API_KEY": "lk",
}


@pytest.fixture
def secrets_in_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "MY_TOKEN", "DB_PASSWORD"):
        monkeypatch.setenv(name, f"value-of-{name}")
    monkeypatch.setenv("PLAIN_SETTING", "kept")


def env_lines(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


# --- the policy ----------------------------------------------------------------------


def test_the_default_drops_secret_looking_names_and_the_model_keys():
    assert DEFAULT_POLICY.apply(ENVIRON) == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/u",
        "PLAIN_SETTING": "kept",
    }


def test_include_keeps_a_name_the_defaults_drop():
    policy = EnvironmentPolicy(include=["github_token", "*CREDENTIALS"])
    out = policy.apply(ENVIRON)
    assert out["GITHUB_TOKEN"] == "gh"
    assert out["GOOGLE_APPLICATION_CREDENTIALS"] == "/creds.json"
    assert "MY_TOKEN" not in out and "OPENAI_API_KEY" not in out


def test_a_wildcard_include_does_not_hand_out_the_model_keys_unless_named():
    out = EnvironmentPolicy(include=["*"]).apply(ENVIRON)
    assert out["MY_TOKEN"] == "tok" and out["DB_PASSWORD"] == "pw"
    assert not {"OPENAI_API_KEY", "anthropic_api_key", "LITELLM_PROXY_API_KEY"} & set(out)
    named = EnvironmentPolicy(include=["*", "OPENAI_API_KEY"]).apply(ENVIRON)
    assert named["OPENAI_API_KEY"] == "sk-test-openai"


def test_exclude_removes_more_and_wins_over_include_and_set_is_forced():
    policy = EnvironmentPolicy(
        include=["GITHUB_TOKEN"],
        exclude=["plain_*", "GITHUB_*"],
        set={"CI": "1", "HOME": "/tmp/home"},
    )
    out = policy.apply(ENVIRON)
    assert "PLAIN_SETTING" not in out and "GITHUB_TOKEN" not in out
    assert out["CI"] == "1" and out["HOME"] == "/tmp/home"


def test_the_json_form_parses_and_bad_fields_are_named():
    policy = EnvironmentPolicy.from_json(
        {"include": ["GITHUB_TOKEN"], "exclude": ["X*"], "set": {"A": "b"}}
    )
    assert policy == EnvironmentPolicy(include=["GITHUB_TOKEN"], exclude=["X*"], set={"A": "b"})
    assert as_policy(None) is DEFAULT_POLICY and as_policy(policy) is policy
    assert as_policy({"set": {"A": "b"}}).set == {"A": "b"}
    bad = [
        ([], "shellEnvironment must be an object"),
        ({"include": "GITHUB_TOKEN"}, "shellEnvironment.include must be a list"),
        ({"exclude": [1]}, "shellEnvironment.exclude must be a list"),
        ({"set": ["A"]}, "shellEnvironment.set must be an object"),
        ({"set": {"A": 1}}, "shellEnvironment.set.A must be a string"),
        ({"set": {"A=B": "c"}}, "shellEnvironment.set has a bad variable name"),
        ({"inclde": []}, "shellEnvironment.inclde is not a field"),
    ]
    for data, message in bad:
        with pytest.raises(ShellEnvironmentError) as err:
            EnvironmentPolicy.from_json(data)
        assert str(err.value).startswith(message), data
        assert isinstance(err.value, ValueError)


# --- commands ------------------------------------------------------------------------


async def test_a_command_does_not_see_secrets_by_default(tmp_path, secrets_in_env):
    result = await DiskWorkspace([tmp_path]).run_command("env")
    seen = env_lines(result.output)
    assert not {"OPENAI_API_KEY", "MY_TOKEN", "DB_PASSWORD"} & set(seen)
    assert seen["PLAIN_SETTING"] == "kept" and "PATH" in seen
    assert "value-of-" not in result.output


async def test_a_workspace_policy_and_the_policy_in_force_are_used(tmp_path, secrets_in_env):
    own = DiskWorkspace([tmp_path], environment=EnvironmentPolicy(include=["MY_TOKEN"]))
    assert env_lines((await own.run_command("env")).output)["MY_TOKEN"] == "value-of-MY_TOKEN"
    plain = DiskWorkspace([tmp_path])
    with using_policy(EnvironmentPolicy(set={"FROM_HOST": "yes"}, exclude=["PLAIN_*"])):
        seen = env_lines((await plain.run_command("env")).output)
    assert seen["FROM_HOST"] == "yes" and "PLAIN_SETTING" not in seen


def script(tmp_path, steps) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


ENV_TURN = [
    {"tool_calls": [{"name": "run_command", "arguments": {"command": "env"}}]},
    {"text": "done"},
]


@pytest.mark.parametrize("own_workspace", [False, True], ids=["host-made", "given"])
async def test_a_hosts_turns_run_commands_under_its_policy(tmp_path, secrets_in_env, own_workspace):
    ws = tmp_path / "ws"
    ws.mkdir()
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, ENV_TURN),
        workdir=ws,
        # A workspace a front end made knows nothing of the policy: the turn sets it.
        workspace=DiskWorkspace([ws]) if own_workspace else None,
        shell_environment={"include": ["MY_TOKEN"], "set": {"FORCED": "1"}},
        capture_commands=False,
    )
    try:
        assert (await host.send("show env")).stop_reason == "end_turn"
        [tool] = [m for m in await host.history() if m["role"] == "tool"]
    finally:
        await host.close()
    seen = env_lines(tool["content"])
    # The included token reaches the command; its value, a secret still, is masked
    # in what the command printed.
    assert seen["FORCED"] == "1" and seen["MY_TOKEN"] == "[redacted]"
    assert "OPENAI_API_KEY" not in seen and "DB_PASSWORD" not in seen


def test_a_bad_policy_fails_when_the_host_is_made(tmp_path):
    with pytest.raises(ShellEnvironmentError, match="shellEnvironment.set.X"):
        AgentHost(store="memory:", workdir=tmp_path, shell_environment={"set": {"X": 2}})
