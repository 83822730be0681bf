"""The suite's lanes (markers given by where a test lives and what it uses) and what
keeps its parallel run (pytest-xdist, on by default) honest.

Lanes: ``editors`` (tests/editors: Neovim, CodeCompanion, the VS Code extension,
code-server, Emacs agent-shell; and acpx, listed in ``EDITORS``), ``postgres`` (a test
on a database server: PostgreSQL, or MariaDB/MySQL), ``crash`` (the kill-at-every-step
sweeps), ``slow`` (tests that take seconds: marked in their modules, or listed in
``SLOW`` here). A test in none of them is ``fast``: ``pytest -m fast`` is the inner loop.

Under xdist every test holds a shared lock on the run while it runs, and a test
marked ``exclusive`` (one that times answers: a latency bound) holds it alone, so
no other worker's test loads the machine while it measures. A queued exclusive test
goes first: workers finishing a test wait for it rather than starting another.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

LANES = ("editors", "postgres", "crash", "slow")
TESTS = Path(__file__).resolve().parent


SLOW = (
    "test_cli.py::test_run_edits_then_checkpoints_restore_undo_history_compact_delete",
    "test_cli.py::test_server_errors_print_one_line_and_exit_1",
    "test_cli.py::test_ctrl_c_cancels_the_turn_and_leaves_the_session_whole",
    "test_cli_restore.py::",
    "test_cli_model.py::",
    "test_cli_turn_output.py::test_a_model_without_a_price_shows_an_unknown_cost_end_to_end",
    "session/test_restore_property.py::",
    "session/test_redaction_end_to_end.py::test_run_json_masks_the_key_in_its_lines_and_stderr",
    "server/test_jsonrpc_grep_responsive.py::",
    "acp/test_security.py::test_a_hostile_grep_does_not_hold_up_session_list",
    "acp/test_security.py::test_mcp_servers_from_session_new_get_the_policys_environment",
)
"""Tests (under tests/; a prefix of the node id) that are slow, unmarked in their
modules: each costs 4-20 CPU seconds (an ``agent-host run`` and its child server,
several turns; a grep left to its 10 s limit; a long stateful property) -- the
fast lane's costliest third, measured with the CPU time of the test and its
children."""


EDITORS = ("acp/test_acpx.py::",)
"""Tests outside tests/editors (a prefix of the node id) that drive a real editor
client: acpx, the headless ACP CLI, with its own Node.js."""


def lanes_of(item: pytest.Item) -> set[str]:
    """The lanes a test is in by where it lives and what it uses (besides its marks)."""
    found = set()
    if item.nodeid.removeprefix("tests/").startswith(SLOW):
        found.add("slow")
    relative = item.path.resolve().relative_to(TESTS)
    if relative.parts[0] == "editors" or item.nodeid.removeprefix("tests/").startswith(EDITORS):
        found.add("editors")
    if "crash" in item.path.stem:
        found.add("crash")
    # the fixture, or a parameter (``[postgres]``) or name saying so
    fixtures = getattr(item, "fixturenames", ())
    if "pg_database" in fixtures or "postgres" in item.name:
        found.add("postgres")
    if "mysql_databases" in fixtures or "mysql" in item.name:  # the same lane: a server
        found.add("postgres")
    return found


def mark_lanes(items: list[pytest.Item]) -> None:
    for item in items:
        for lane in lanes_of(item):
            item.add_marker(lane)
        if not any(item.get_closest_marker(lane) for lane in LANES):
            item.add_marker("fast")


class RunLock:
    """A readers-writer lock over the workers of one run (two ``flock`` files).

    ``gate`` gives a waiting writer priority: readers pass through it before taking
    ``room`` shared, a writer holds it while it waits for ``room`` exclusively."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.gate: IO[str] = open(folder / "agent-host-gate.lock", "a+")  # noqa: SIM115
        self.room: IO[str] = open(folder / "agent-host-room.lock", "a+")  # noqa: SIM115

    @contextmanager
    def shared(self) -> Iterator[None]:
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        fcntl.flock(self.room, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(self.room, fcntl.LOCK_UN)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.room, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self.room, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self.gate, fcntl.LOCK_UN)


def run_lock(config: pytest.Config) -> RunLock | None:
    """The run's lock in an xdist worker (whose basetemp is its own folder in the
    run's); None in a run without workers, where tests never overlap."""
    if "PYTEST_XDIST_WORKER" not in os.environ or not config.option.basetemp:
        return None
    return RunLock(Path(config.option.basetemp).parent)
