"""The Neovim plugin and the sandbox: a command the sandbox stopped is offered to
run again without it (permission.lua shows why); allowed, it runs unconfined."""

from __future__ import annotations

import pytest

from agent_host.session.sandbox import mechanism

from .neovim_harness import run_scenario

pytestmark = pytest.mark.skipif(
    not mechanism().available, reason=f"no sandbox: {mechanism().reason}"
)


def test_a_stopped_command_is_asked_about_with_its_reason_and_runs_unconfined(nvim, tmp_path):
    outside = tmp_path / "outside.txt"
    steps = [
        {
            "text": "Writing.",
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": f"echo out > {outside}"}}
            ],
        },
        {"text": "Done."},
    ]
    seen = run_scenario(nvim, tmp_path, "sandbox", steps)
    [asked] = seen["asked"]
    assert (
        asked["prompt"]
        == f"agent-host: run WITHOUT the sandbox: run_command: echo out > {outside}?"
    )
    assert "Allow always (this command, without the sandbox)" in asked["labels"]
    float_text = "\n".join(asked["float_lines"])
    assert f"echo out > {outside}" in float_text
    assert "The sandbox stopped it: it wrote where the sandbox lets no command write" in float_text
    assert outside.read_text() == "out\n"
