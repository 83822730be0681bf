"""Writes that are commands in disguise (.git/config, git hooks, editor settings)
are approved as commands: asked under auto-edit and ask, refused under read-only,
run under auto -- whichever file tool makes them, through symlinks and case."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent_host.session import events as ev
from agent_host.session.host import AgentHost
from agent_host.session.protected_paths import protected_reason

FSMONITOR = '[core]\n\tfsmonitor = "touch planted; false"\n'
HOOK = "#!/bin/sh\ntouch planted\n"


def script(tmp_path, *calls) -> str:
    steps = [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [*steps, {"text": "done"}]}))
    return f"scripted:{path}"


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.py").write_text("print('a')\n")
    return root


class Answers:
    """A permission callback that answers ``decision`` and records what it was asked."""

    def __init__(self, decision: str) -> None:
        self.decision = decision
        self.asked: list = []

    async def __call__(self, request) -> str:
        self.asked.append(request)
        return self.decision


async def run(tmp_path, repo, approval, answers, *calls):
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, *calls),
        workdir=repo,
        approval=approval,
        permission=answers,
    )
    try:
        await host.send("go")
        log = await host.store.read(host.session_id)
    finally:
        await host.close()
    return [e for e in log if type(e) is ev.ToolResult]


WRITES = {
    ".git/config": ("write_file", {"path": ".git/config", "content": FSMONITOR}),
    ".git/hooks/pre-commit": ("write_file", {"path": ".git/hooks/pre-commit", "content": HOOK}),
}


@pytest.mark.parametrize("target", sorted(WRITES))
async def test_auto_edit_asks_and_a_rejection_writes_nothing(tmp_path, repo, target):
    before = (repo / target).read_bytes() if (repo / target).exists() else None
    answers = Answers("reject_once")
    [result] = await run(tmp_path, repo, "auto-edit", answers, WRITES[target])
    [request] = answers.asked
    assert request.tool == "write_file" and request.kind == "edit"
    assert request.protected and request.protected.startswith(".git")
    assert request.diff  # the user sees what would be written
    assert result.is_error and result.output.startswith("Permission denied")
    after = (repo / target).read_bytes() if (repo / target).exists() else None
    assert after == before
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, check=False)
    assert not (repo / "planted").exists()


async def test_auto_edit_writes_it_when_the_user_allows(tmp_path, repo):
    answers = Answers("allow_once")
    [result] = await run(tmp_path, repo, "auto-edit", answers, WRITES[".git/config"])
    assert len(answers.asked) == 1 and not result.is_error
    assert (repo / ".git/config").read_text() == FSMONITOR


async def test_ordinary_edits_still_do_not_ask_under_auto_edit(tmp_path, repo):
    answers = Answers("reject_once")
    call = ("edit_file", {"path": "a.py", "old_string": "'a'", "new_string": "'b'"})
    [result] = await run(tmp_path, repo, "auto-edit", answers, call)
    assert not answers.asked and not result.is_error


async def test_allow_always_for_a_tool_does_not_cover_a_protected_path(tmp_path, repo):
    answers = Answers("allow_always")
    calls = [
        ("write_file", {"path": "b.py", "content": "b\n"}),
        ("write_file", {"path": "c.py", "content": "c\n"}),
        WRITES[".git/hooks/pre-commit"],
        WRITES[".git/config"],
    ]
    results = await run(tmp_path, repo, "ask", answers, *calls)
    assert [bool(r.protected) for r in answers.asked] == [False, True, True]
    assert not any(r.is_error for r in results)


async def test_auto_runs_it_as_it_runs_commands(tmp_path, repo):
    answers = Answers("reject_once")
    [result] = await run(tmp_path, repo, "auto", answers, WRITES[".git/config"])
    assert not answers.asked and not result.is_error
    assert (repo / ".git/config").read_text() == FSMONITOR


async def test_read_only_refuses_it_without_asking(tmp_path, repo):
    answers = Answers("allow_once")
    before = (repo / ".git/config").read_text()
    [result] = await run(tmp_path, repo, "read-only", answers, WRITES[".git/config"])
    assert not answers.asked and result.is_error
    assert (repo / ".git/config").read_text() == before


@pytest.mark.parametrize(
    "call",
    [
        ("write_file", {"path": "x", "content": FSMONITOR}),  # x -> .git/config
        ("edit_file", {"path": "x", "old_string": "[core]", "new_string": FSMONITOR}),
        ("write_file", {"path": "hooks/pre-commit", "content": HOOK}),  # hooks -> .git/hooks
        ("write_file", {"path": ".GIT/Config", "content": FSMONITOR}),
        ("write_file", {"path": "sub/.git/config", "content": FSMONITOR}),
        ("write_file", {"path": ".vscode/settings.json", "content": "{}"}),
        ("delete_file", {"path": ".git/config"}),
    ],
    ids=["symlink", "edit-symlink", "symlinked-folder", "case", "nested", "vscode", "delete"],
)
async def test_every_spelling_and_tool_is_asked_for(tmp_path, repo, call):
    os.symlink(".git/config", repo / "x")
    os.symlink(".git/hooks", repo / "hooks")
    (repo / "sub" / ".git").mkdir(parents=True)
    answers = Answers("reject_once")
    [result] = await run(tmp_path, repo, "auto-edit", answers, call)
    [request] = answers.asked
    assert request.protected and result.is_error
    assert "fsmonitor" not in (repo / ".git/config").read_text()
    assert not (repo / ".git/hooks/pre-commit").exists()


def test_the_list_matches_by_component_not_by_prefix(tmp_path):
    root = tmp_path
    for shown in (".gitignore", ".github/workflows/ci.yml", "src/git/config", "my.git/x"):
        assert protected_reason([root], root / shown) is None, shown
    for shown in (".git", ".git/config", "a/b/.git/hooks/x", ".g\u200cit/config", ".git./config"):
        assert protected_reason([root], root / shown), shown
    assert protected_reason([root], tmp_path.parent / ".git/config") is None  # not ours


async def test_a_symlink_swapped_in_after_approval_is_refused_at_the_write(tmp_path, repo):
    from agent_host.session.workspace import DiskWorkspace

    class Swapping(DiskWorkspace):
        """Another process turns x into a symlink to .git/config after the approval."""

        async def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
            if path == "x" and not os.path.islink(repo / "x"):
                os.unlink(repo / "x")
                os.symlink(".git/config", repo / "x")
            return await super().read_bytes(path, limit=limit)

    (repo / "x").write_text("plain\n")
    answers = Answers("reject_once")
    host = AgentHost(
        store="memory:",
        model=script(tmp_path, ("write_file", {"path": "x", "content": FSMONITOR})),
        workspace=Swapping([repo]),
        approval="auto-edit",
        permission=answers,
    )
    try:
        await host.send("go")
        log = await host.store.read(host.session_id)
    finally:
        await host.close()
    assert not answers.asked  # x was a plain file when it was approved
    [result] = [e for e in log if type(e) is ev.ToolResult]
    assert result.is_error and "protected" in result.output
    assert "fsmonitor" not in (repo / ".git/config").read_text()
