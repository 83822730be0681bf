"""agent-host restore over a child server: files only, conversation only, and the
user's own edits left until --force."""

from __future__ import annotations

import json

import pytest

from agent_host.session.sandbox import mechanism

# The fixtures are test_cli's, imported so pytest finds them here too; as arguments
# they then look like redefinitions to the linter.
# ruff: noqa: F811
from .test_cli import (  # noqa: F401
    EDIT_TURN,
    EDITED,
    ORIGINAL,
    agent_host,
    common,
    project,
    script,
    store,
)


def test_restore_files_only_and_conversation_only(project, store, script):
    model = script(EDIT_TURN)
    assert (
        agent_host(
            "run", "Edit", "--session", "s1", "--approve", "auto", *common(store, project, model)
        ).returncode
        == 0
    )
    conversation = agent_host("restore", "s1", "2", "--conversation-only", *common(store, project))
    assert conversation.returncode == 0, conversation.stderr
    assert (project / "greet.py").read_text() == EDITED  # the disk is left alone
    assert "no files" in conversation.stdout
    assert agent_host("undo-restore", "s1", *common(store, project)).returncode == 0
    files = agent_host("restore", "s1", "2", "--files-only", "--json", *common(store, project))
    assert files.returncode == 0, files.stderr
    assert json.loads(files.stdout) == {
        "restoredFiles": ["greet.py"],
        "removedEvents": 0,
        "unrevertedBuffers": [],
        "conflicts": [],
        "notCaptured": [],
        "unconfined": [],
        "notRestored": {},
        "messagesRemoved": 0,
        "preview": None,
    }
    assert (project / "greet.py").read_text() == ORIGINAL


def test_restore_leaves_the_users_edit_until_forced(project, store, script):
    model = script(EDIT_TURN)
    run = agent_host(
        "run", "Edit", "--session", "s1", "--approve", "auto", *common(store, project, model)
    )
    assert run.returncode == 0, run.stderr
    (project / "greet.py").write_text("# the user's own work\n")
    kept = agent_host("restore", "s1", "2", *common(store, project))
    assert kept.returncode == 0, kept.stderr
    assert (project / "greet.py").read_text() == "# the user's own work\n"
    assert "left as they are, changed since the session last wrote them: greet.py" in kept.stderr
    assert "agent-host undo-restore s1 && agent-host restore s1 2 --force" in kept.stderr
    assert agent_host("undo-restore", "s1", *common(store, project)).returncode == 0
    forced = agent_host("restore", "s1", "2", "--force", "--json", *common(store, project))
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["restoredFiles"] == ["greet.py"]
    assert (project / "greet.py").read_text() == ORIGINAL
    assert agent_host("undo-restore", "s1", *common(store, project)).returncode == 0
    assert (project / "greet.py").read_text() == "# the user's own work\n"  # kept for undo


@pytest.mark.parametrize("sandbox", ["full", "workspace-write"])
def test_checkpoints_and_restore_warn_of_outside_changes_only_when_unconfined(
    project, store, script, sandbox
):
    if sandbox != "full" and not mechanism().available:
        pytest.skip(f"no sandbox: {mechanism().reason}")
    command = {"name": "run_command", "arguments": {"command": "echo b > b.txt"}}
    model = script([{"tool_calls": [command]}, {"text": "made b"}])
    run = agent_host(
        "run", "Make b", "--session", "s1", "--approve", "auto", "--sandbox", sandbox,
        *common(store, project, model),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    listed = agent_host("checkpoints", "s1", *common(store, project))
    restored = agent_host("restore", "s1", "2", *common(store, project))
    assert listed.returncode == restored.returncode == 0, restored.stderr
    assert not (project / "b.txt").exists()
    ran = "ran without the sandbox: `echo b > b.txt`"
    warning = "Ran without the sandbox: `echo b > b.txt`; what they changed outside the workspace"
    if sandbox == "full":
        assert ran in listed.stdout
        assert f"{warning} were not undone." in restored.stderr
    else:
        assert "sandbox" not in listed.stdout and "sandbox" not in restored.stderr
        assert "changed: b.txt" in listed.stdout  # the listing is there all the same
