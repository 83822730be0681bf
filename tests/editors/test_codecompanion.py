"""agent-host in CodeCompanion.nvim 19.22.0 (headless Neovim), the way its users run it
(issue 23): the edited file open in a buffer, prompts and ``\\rewind``-style ACP slash
commands typed into the chat. See codecompanion_harness.py for how it runs; every
message the agent sends is checked against the ACP v1 schema.

CodeCompanion applies ``fs/write_text_file`` to an open buffer by splitting the text
on newlines and saving (``update!``), so the agent's ``"a\\nb\\n"`` lands as
``"a\\nb\\n\\n"``: a client's normalisation, which a rewind must still restore.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ..acp.schema_check import schema_file
from . import codecompanion_harness as cc
from .conftest import STALL_WALL, STALLED_MODEL, stalled_model_env

pytestmark = pytest.mark.timeout(300)

OLD = "old\n"
NEW = "a\nb\n"


def landed(text: str) -> tuple[str, str]:
    """``text`` on disk as written, or with CodeCompanion's extra final newline."""
    return text, text + "\n"


LANDED = landed(NEW)
WRITES_A = [
    {
        "text": "Writing a.txt.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": NEW}}],
    },
    {"text": "done"},
]
EDIT_IN_CHAT = [
    {"do": "edit", "path": "a.txt"},
    {"do": "open_chat"},
    {"do": "say", "text": "write a.txt", "path": "a.txt"},
    {"do": "settle", "path": "a.txt"},  # CodeCompanion's file watcher is debounced
]
REPEATS = 20
RESTORED_A = re.compile(r"(?<!Not )restored (?:\d+ files? \()?a\.txt")
"""The rewind's "restored a.txt" / "restored 1 file (a.txt)", not "Not restored ...: a.txt"."""


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Path:
    schema_file()  # installed up front, not in the first test's time
    return cc.unpack(tmp_path_factory.mktemp("codecompanion"))


def drive(nvim: str, clients: Path, base: Path, actions: list[dict], **kw: Any) -> list[dict]:
    results = cc.run(nvim, clients, base, actions, **kw)
    cc.assert_schema_valid(base)
    return results


def client_writes(base: Path) -> list[dict]:
    return [m["params"] for m in cc.agent_messages(base) if m.get("method") == "fs/write_text_file"]


def test_an_agent_edit_reaches_the_open_buffer_and_the_disk(
    nvim: str, clients: Path, tmp_path: Path
) -> None:
    results = drive(nvim, clients, tmp_path, EDIT_IN_CHAT, steps=WRITES_A, files={"a.txt": OLD})
    said, settled = results[2], results[3]
    assert said["done"] and said["started"], said
    assert "Writing a.txt." in said["reply"] and "done" in said["reply"], said["reply"]
    assert [u["status"] for u in cc.tool_updates(tmp_path)] == ["completed"]
    # through the editor: CodeCompanion put the text in the buffer and saved it
    assert [(w["path"], w["content"]) for w in client_writes(tmp_path)] == [
        (str(tmp_path / "proj" / "a.txt"), NEW)
    ]
    assert [w["ok"] for w in said["writes"]] == [True]
    assert settled["disk"] in LANDED, settled
    assert settled["buffer"] == settled["disk"] and settled["modified"] is False, settled


def test_the_agent_writes_an_open_file_only_through_the_editor(
    nvim: str, clients: Path, tmp_path: Path
) -> None:
    """One clean write: the disk still held the old text when the editor's write came
    (the agent did not write it first, which is what makes editors ask "changed on
    disk?")."""
    results = drive(nvim, clients, tmp_path, EDIT_IN_CHAT, steps=WRITES_A, files={"a.txt": OLD})
    writes = results[2]["writes"]
    assert [(w["content"], w["disk_before"]) for w in writes] == [(NEW, OLD)], writes
    assert results[3]["disk"] in LANDED and results[3]["buffer"] == results[3]["disk"]


def test_slash_commands_reach_every_chat(nvim: str, clients: Path, tmp_path: Path) -> None:
    """Issue 23, finding 4: CodeCompanion drops an ``available_commands_update`` that
    comes before the ``session/new`` answer naming its session (1 run in 8), and then
    ``\\rewind`` reaches the model as text. Each of REPEATS chats is offered the
    commands and its ``\\checkpoints`` runs as the command."""
    one = [{"do": "open_chat"}, {"do": "say", "text": "\\checkpoints"}, {"do": "close_chat"}]
    results = drive(nvim, clients, tmp_path, one * REPEATS, steps=[])
    opened = [r for r in results if r["do"] == "open_chat"]
    said = [r for r in results if r["do"] == "say"]
    assert len(opened) == REPEATS
    for i, (chat, turn) in enumerate(zip(opened, said, strict=True)):
        assert chat["connected"] and chat["offered"], f"chat {i}: {chat}"
        assert {"checkpoints", "rewind", "undo-rewind"} <= set(chat["commands"]), f"chat {i}"
        assert "\\rewind" in chat["completion"], f"chat {i}: {chat['completion']}"
        assert "No checkpoints yet" in turn["reply"], f"chat {i}: {turn}"
    prompts = [
        m["params"]["prompt"][0]["text"]
        for m in cc.messages(tmp_path, "client")
        if m.get("method") == "session/prompt"
    ]
    assert prompts == ["/checkpoints"] * REPEATS
    _assert_commands_follow_the_session(tmp_path)


def _assert_commands_follow_the_session(base: Path) -> None:
    """On each connection, nothing about a session before the answer naming it."""
    for path in sorted((base / "wire").glob("*.jsonl")):
        named: set[str] = set()
        for row in path.read_text().splitlines():
            entry = json.loads(row)
            if entry["from"] != "agent":
                continue
            message = json.loads(entry["line"])
            result = message.get("result")
            if isinstance(result, dict) and "sessionId" in result:
                named.add(result["sessionId"])
            if message.get("method") == "session/update":
                sid = message["params"]["sessionId"]
                assert sid in named, f"{path.name}: an update about {sid} before its answer"


def test_rewind_and_undo_rewind_of_a_file_not_open(
    nvim: str, clients: Path, tmp_path: Path
) -> None:
    actions = [
        {"do": "open_chat"},
        {"do": "say", "text": "write a.txt", "path": "a.txt"},
        {"do": "say", "text": "\\rewind", "path": "a.txt"},
        {"do": "say", "text": "\\undo-rewind", "path": "a.txt"},
    ]
    results = drive(nvim, clients, tmp_path, actions, steps=WRITES_A, files={"a.txt": OLD})
    wrote, rewound, undone = results[1:]
    assert wrote["disk"] == NEW, wrote
    assert "Rewound to just before 'write a.txt'" in rewound["reply"], rewound["reply"]
    assert RESTORED_A.search(rewound["reply"]), rewound["reply"]
    assert rewound["disk"] == OLD
    assert "Undid the last rewind" in undone["reply"], undone["reply"]
    assert RESTORED_A.search(undone["reply"]), undone["reply"]
    assert undone["disk"] == NEW


def test_rewind_restores_the_open_file_and_undo_rewind_brings_it_back(
    nvim: str, clients: Path, tmp_path: Path
) -> None:
    """Issue 23, finding 2: CodeCompanion's extra final newline is its normalisation,
    not a user edit, so the rewind restores the open file (buffer and disk)."""
    actions = [
        *EDIT_IN_CHAT,
        {"do": "say", "text": "\\rewind", "path": "a.txt"},
        {"do": "settle", "path": "a.txt"},
        {"do": "say", "text": "\\undo-rewind", "path": "a.txt"},
        {"do": "settle", "path": "a.txt"},
    ]
    results = drive(nvim, clients, tmp_path, actions, steps=WRITES_A, files={"a.txt": OLD})
    after_turn = results[3]
    rewound, after_rewind, undone, after_undo = results[4:]
    assert after_turn["disk"] in LANDED, after_turn
    assert RESTORED_A.search(rewound["reply"]), rewound["reply"]
    assert "Kept" not in rewound["reply"], rewound["reply"]
    # exactly: the agent learned CodeCompanion's extra newline from the turn's write
    assert after_rewind["disk"] == OLD, after_rewind
    assert after_rewind["buffer"] == after_rewind["disk"], after_rewind
    assert RESTORED_A.search(undone["reply"]), undone["reply"]
    assert after_undo["disk"] == after_turn["disk"], (after_undo, after_turn)
    assert after_undo["buffer"] == after_undo["disk"], after_undo


def test_a_user_edit_is_kept_by_rewind_and_force_overwrites_it(
    nvim: str, clients: Path, tmp_path: Path
) -> None:
    """A real edit in the buffer (typed and saved) is kept; the rewind's message says
    what to type to force it, and typing that restores the file."""
    actions = [
        *EDIT_IN_CHAT,
        {"do": "user_edit", "path": "a.txt", "lines": ["mine"]},
        {"do": "say", "text": "\\rewind", "path": "a.txt"},
        # the command the message gives, typed with CodeCompanion's `\` trigger
        {"do": "say", "text": "\\rewind %s --force", "fill": "/rewind (%-?%d+) %-%-force"},
        {"do": "settle", "path": "a.txt"},
    ]
    results = drive(nvim, clients, tmp_path, actions, steps=WRITES_A, files={"a.txt": OLD})
    kept, forced, settled = results[5], results[6], results[7]
    assert "a.txt" in kept["reply"] and "--force" in kept["reply"], kept["reply"]
    assert kept["disk"] == "mine\n" and kept["buffer"] == "mine\n", kept
    assert forced["sent"].endswith("--force") and RESTORED_A.search(forced["reply"]), forced
    assert settled["disk"] == OLD and settled["buffer"] == settled["disk"], settled


def test_a_refused_write_fails_the_tool_call(nvim: str, clients: Path, tmp_path: Path) -> None:
    """The editor fails the write (a BufWritePre that errors, as a plugin vetoing the
    save would): the tool call fails, and the disk keeps the old text."""
    actions = [
        {"do": "edit", "path": "a.txt"},
        {"do": "refuse_writes", "path": "a.txt"},
        {"do": "open_chat"},
        {"do": "say", "text": "write a.txt", "path": "a.txt"},
    ]
    results = drive(nvim, clients, tmp_path, actions, steps=WRITES_A, files={"a.txt": OLD})
    said = results[3]
    assert [w["ok"] for w in said["writes"]] == [False], said["writes"]
    assert [u["status"] for u in cc.tool_updates(tmp_path)] == ["failed"]
    assert said["disk"] == OLD, said


def test_a_missing_key_is_named_where_the_user_sees_it(
    nvim: str, clients: Path, tmp_path: Path
) -> None:
    """Issue 23, finding 6: CodeCompanion shows the agent's errors as notifications;
    the variable to set is in the message, not only in ``data``."""
    actions = [{"do": "open_chat"}, {"do": "say", "text": "hello"}]
    results = drive(
        nvim,
        clients,
        tmp_path,
        actions,
        model="openai/gpt-4o-mini",
        env={"OPENAI_API_KEY": None, "AGENT_HOST_OPENAI_API_KEY": None},
    )
    opened, said = results
    assert not opened["connected"], opened
    for where in (opened, said):
        assert any("OPENAI_API_KEY" in e for e in where["errors"]), where


@pytest.mark.exclusive
def test_a_stalled_model_is_reported_in_the_chat_within_the_limit(
    nvim: str, clients: Path, tmp_path: Path, stalled_model
) -> None:
    """Issue 23, finding 7: an endpoint that accepts and never answers. The chat
    shows the wait (the retry notice, as reasoning) and then the error naming the
    setting, also notified, within STALL_WALL of the prompt."""
    actions = [
        {"do": "open_chat"},
        {"do": "say", "text": "hello", "wait_ms": int(STALL_WALL + 30) * 1000},
    ]
    results = drive(
        nvim,
        clients,
        tmp_path,
        actions,
        model=STALLED_MODEL,
        env={**stalled_model_env(stalled_model), "AGENT_HOST_OPENAI_API_KEY": None},
    )
    opened, said = results
    assert opened["connected"], opened
    assert said["done"] and said["ms"] < STALL_WALL * 1000, said
    url = stalled_model.url + "/v1"
    assert f"no answer from {url} within 1 s, 2 times" in said["reply"], said["reply"]
    assert "AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT" in said["reply"], said["reply"]
    assert any("AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT" in e for e in said["errors"]), said
    # the wait reached the editor: the notice on the wire and in the chat
    notices = [
        m["params"]["update"]["content"]["text"]
        for m in cc.agent_messages(tmp_path)
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
    ]
    assert len(notices) == 1, notices
    assert notices[0].startswith(f"no answer from {STALLED_MODEL} in 1 s; retry 1 of 1 in ")
    assert notices[0] in said["reply"], said["reply"]
    assert len(stalled_model.received) == 2
