"""Random turns, restores and undos always leave the files where a simple model says.

The model under test is a queue-driven stand-in for a language model: each turn it
asks for one file change through the real tools, then stops. Hypothesis picks the
changes and when to restore (to any checkpoint) or undo the last restore.
"""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agent_host.session.host import AgentHost
from agent_host.session.model import (
    Finish,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    UsageReport,
)

PATHS = ["a.txt", "dir/b.txt", "old.txt"]
INITIAL = {"old.txt": "was here before the session\n", "keep.txt": "never touched\n"}


class QueuedModel:
    """Asks for the queued tool call, then answers with text once it has its result."""

    model = "test/queued"

    def __init__(self) -> None:
        self.queue: list[tuple[str, dict]] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.messages[-1]["role"] == "user" and self.queue:
            name, arguments = self.queue.pop(0)
            yield ToolCallRequest(f"call-{request.step}", name, arguments)
            yield UsageReport(10, 5)
            yield Finish("tool_use")
        else:
            yield TextDelta("done")
            yield UsageReport(10, 1)
            yield Finish("end_turn")

    async def close(self) -> None:
        return None


def disk(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


@attrs.define
class Turn:
    checkpoint: int
    before: dict[str, str]
    """The files as they were just before the turn: what a restore to it puts back."""
    changed_after: set[str]
    """Paths the agent changed in this turn or later."""


class RestoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="restore-prop-"))
        self.ws = self.tmp / "ws"
        for path, text in INITIAL.items():
            (self.ws / path).parent.mkdir(parents=True, exist_ok=True)
            (self.ws / path).write_text(text)
        self.loop = asyncio.new_event_loop()
        self.model = QueuedModel()
        self.host = AgentHost(
            store=self.tmp / "store", provider=self.model, workdir=self.ws, auto_compact=None
        )
        self.files = dict(INITIAL)
        self.turns: list[Turn] = []
        self.undo: tuple[dict[str, str], list, set[str]] | None = None
        self.counter = 0
        self.users: set[str] = set()
        """Paths the user changed since the session last wrote them: a restore
        leaves them (conflicts), and so does an undo, if changed after the restore."""
        self.users_since_restore: set[str] = set()

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def turn(self, name: str, arguments: dict, apply, path: str | None = None) -> None:
        path = path or arguments["path"]
        before = dict(self.files)
        self.model.queue.append((name, arguments))
        result = self.run(self.host.send(f"{name} {path}"))
        assert result.stop_reason == "end_turn"
        apply()
        changed = {path} if before.get(path) != self.files.get(path) else set()
        self.users -= changed  # the agent wrote it last now
        for earlier in self.turns:
            earlier.changed_after |= changed
        self.turns.append(Turn(result.checkpoint, before, changed))
        self.undo = None

    def fresh(self) -> str:
        self.counter += 1
        return f"content {self.counter}\n"

    @rule(path=st.sampled_from(PATHS))
    def write(self, path):
        text = self.fresh()
        self.turn(
            "write_file",
            {"path": path, "content": text},
            lambda: self.files.__setitem__(path, text),
        )

    @rule(path=st.sampled_from(PATHS))
    def edit(self, path):
        if path not in self.files:
            return
        new = self.fresh()
        self.turn(
            "edit_file",
            {"path": path, "old_string": self.files[path], "new_string": new},
            lambda: self.files.__setitem__(path, new),
        )

    @rule(path=st.sampled_from(PATHS))
    def delete(self, path):
        if path not in self.files:
            return
        self.turn("delete_file", {"path": path}, lambda: self.files.pop(path))

    @rule(path=st.sampled_from(PATHS), delete=st.booleans())
    def command(self, path, delete):
        """The same changes through the shell: captured, not written by the tools."""
        if delete:
            shell, apply = f"rm -f {path}", lambda: self.files.pop(path, None)
        else:
            text = self.fresh()
            shell = f"mkdir -p $(dirname {path}) && printf '%s\\n' '{text.strip()}' > {path}"
            apply = lambda: self.files.__setitem__(path, text)  # noqa: E731
        self.turn("run_command", {"command": shell}, apply, path)

    @rule(path=st.sampled_from([*PATHS, "keep.txt"]))
    def user_edit(self, path):
        """The user edits a file between turns, outside the session."""
        text = f"the user's {self.fresh()}"
        (self.ws / path).parent.mkdir(parents=True, exist_ok=True)
        (self.ws / path).write_text(text)
        self.files[path] = text
        self.users.add(path)
        self.users_since_restore.add(path)
        # Restoring to a checkpoint takes back the agent's changes only: back to a
        # point after which the agent never changed this file, it keeps the user's.
        for turn in self.turns:
            if path not in turn.changed_after:
                turn.before[path] = text

    @precondition(lambda self: self.turns)
    @rule(data=st.data(), files=st.booleans())
    def restore(self, data, files):
        index = data.draw(st.integers(0, len(self.turns) - 1))
        checkpoint, before = self.turns[index].checkpoint, self.turns[index].before
        self.undo = (dict(self.files), copy.deepcopy(self.turns), set(self.users))
        done = self.run(self.host.restore(self.host.session_id, checkpoint, files=files))
        if files:
            # The user's files are conflicts: left as they are, everything else back.
            mine = {p: t for p, t in self.files.items() if p in self.users}
            self.files = {p: t for p, t in before.items() if p not in self.users} | mine
            assert set(done.conflicts) <= self.users
            self.turns = self.turns[:index]
        else:  # the removed turns' edits stay on disk, after every remaining turn
            carried = set().union(*(t.changed_after for t in self.turns[index:]))
            self.turns = self.turns[:index]
            for turn in self.turns:
                turn.changed_after |= carried
        self.users_since_restore = set()

    @precondition(lambda self: self.undo is not None)
    @rule()
    def undo_restore(self):
        self.run(self.host.undo_restore())
        files, self.turns, users = self.undo
        # What the user changed after the restore stays as they left it.
        later = {p: self.files.get(p) for p in self.users_since_restore}
        self.files = {p: t for p, t in files.items() if p not in later}
        self.files |= {p: t for p, t in later.items() if t is not None}
        self.users = users | self.users_since_restore
        for path in self.users_since_restore & set(self.files):
            for turn in self.turns:
                if path not in turn.changed_after:
                    turn.before[path] = self.files[path]
        self.undo = None

    @invariant()
    def files_match_the_model(self):
        assert disk(self.ws) == self.files

    @invariant()
    def checkpoints_match_the_model(self):
        checkpoints = self.run(self.host.list_checkpoints())
        assert [c.seq for c in checkpoints] == [t.checkpoint for t in self.turns]

    def teardown(self):
        self.run(self.host.close())
        self.loop.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# On CI (AGENT_HOST_REQUIRE_EDITORS set) the same 40 examples run every time, so a
# fresh seed never decides a landing; elsewhere each run tries new ones. A random run
# of 400 examples found the sequence that tests/session/test_restore_conflicts.py
# now replays.
RestoreMachine.TestCase.settings = settings(
    derandomize=bool(os.environ.get("AGENT_HOST_REQUIRE_EDITORS")),
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_restore_and_undo_match_a_model_of_the_files = RestoreMachine.TestCase
