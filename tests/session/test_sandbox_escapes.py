"""Escapes a command may try, each blocked (and, where its failure says so, reported
as the sandbox's doing) under the default policy, workspace-write, and each
succeeding under ``full`` -- so a test that passes proves the sandbox did it.

Run twice: as this process's user (root in CI: bubblewrap without a user
namespace, capabilities dropped) and as an unprivileged user (``nobody`` through
setpriv: bubblewrap in a user namespace, as users run it), the command started by
a real DiskWorkspace in a small driver process.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from agent_host.session.sandbox import Limits, Sandbox, SandboxPolicy, mechanism
from agent_host.session.workspace import DiskWorkspace

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not mechanism().available, reason=f"no sandbox: {mechanism().reason}"),
]

NOBODY = 65534
IS_ROOT = os.geteuid() == 0
CAN_DROP = IS_ROOT and shutil.which("setpriv") is not None
USERS = [
    "this-user",
    pytest.param(
        "nobody",
        marks=pytest.mark.skipif(not CAN_DROP, reason="needs root and setpriv to become nobody"),
    ),
]
# A Python anyone may run (the test's own may live in root's home).
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
FAKE_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- fake-key-for-the-sandbox-test"
STORE_TEXT = "the agent's own session log"

# The driver: one command in a DiskWorkspace under a policy, as whoever runs it.
DRIVER = """
import asyncio, json, os, sys
from pathlib import Path
from agent_host.session.sandbox import Sandbox, SandboxPolicy
from agent_host.session.workspace import DiskWorkspace
spec = json.loads(sys.argv[1])
os.environ["HOME"] = spec["home"]
sandbox = Sandbox(SandboxPolicy.from_json(spec["policy"]), hide=[Path(spec["store"])])
ws = DiskWorkspace([spec["ws"]], sandbox=sandbox)
command = spec["command"].replace("{agent}", str(os.getpid()))
r = asyncio.run(ws.run_command(command, timeout=60))
sandbox.close()
print(json.dumps({"exit_code": r.exit_code, "output": r.output, "denial": r.sandbox_denial}))
"""


@attrs.frozen
class Place:
    base: Path
    ws: Path
    outside: Path
    home: Path
    store: Path
    user: str

    def run(self, command: str, policy: dict[str, Any] | str) -> dict[str, Any]:
        spec = {
            "home": str(self.home),
            "policy": policy,
            "store": str(self.store),
            "ws": str(self.ws),
            "command": command,
        }
        if self.user == "this-user":
            return _run_here(spec)
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        argv += [sys.executable, "-c", DRIVER, json.dumps(spec)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=self.base)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def _run_here(spec: dict[str, Any]) -> dict[str, Any]:
    old = os.environ.get("HOME")
    os.environ["HOME"] = spec["home"]
    try:
        sandbox = Sandbox(SandboxPolicy.from_json(spec["policy"]), hide=[Path(spec["store"])])
        ws = DiskWorkspace([spec["ws"]], sandbox=sandbox)
        command = spec["command"].replace("{agent}", str(os.getpid()))
        r = asyncio.run(ws.run_command(command, timeout=60))
        sandbox.close()
    finally:
        if old is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old
    return {"exit_code": r.exit_code, "output": r.output, "denial": r.sandbox_denial}


@pytest.fixture(params=USERS)
def place(request) -> Iterator[Place]:
    # Not under tmp_path: pytest's folders are root's alone, and nobody must reach these.
    base = Path(tempfile.mkdtemp(prefix="sandbox-escape-"))
    base.chmod(0o755)
    ws, outside, home, store = base / "ws", base / "outside", base / "home", base / "store"
    for folder in (ws, outside, home / ".ssh", store):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(FAKE_KEY)
    (store / "session.jsonl").write_text(STORE_TEXT)
    (outside / "target.txt").write_text("original\n")
    if request.param == "nobody":
        for path in [base, *base.rglob("*")]:
            os.lchown(path, NOBODY, NOBODY)
    try:
        yield Place(base, ws, outside, home, store, request.param)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def blocked_then_allowed(place: Place, command: str, escaped: Any) -> dict[str, Any]:
    """``command`` fails under workspace-write (``escaped()`` false after it) and
    succeeds under full (``escaped()`` true); the confined result."""
    confined = place.run(command, "workspace-write")
    assert confined["exit_code"] != 0, confined
    assert not escaped(), confined
    free = place.run(command, "full")
    assert free["exit_code"] == 0, free
    assert escaped(), free
    return confined


WRITES = {
    "absolute path": "echo escaped > {outside}/abs.txt",
    "dot-dot": "echo escaped > ../outside/abs.txt",
    "symlink planted inside": "echo escaped > link/abs.txt",
    "/proc/self/cwd": "echo escaped > /proc/self/cwd/../outside/abs.txt",
}


@pytest.mark.parametrize("how", list(WRITES))
def test_a_write_outside_the_workspace_is_blocked_and_reported(place, how):
    (place.ws / "link").symlink_to(place.outside)
    if place.user == "nobody":
        os.lchown(place.ws / "link", NOBODY, NOBODY)
    command = WRITES[how].format(outside=place.outside)
    confined = blocked_then_allowed(place, command, (place.outside / "abs.txt").exists)
    assert "Read-only file system" in confined["output"]
    assert confined["denial"] is not None and "write" in confined["denial"]


def test_a_hard_link_to_an_outside_file_is_blocked_and_reported(place):
    target = place.outside / "target.txt"
    command = f"ln {target} hard && echo escaped >> hard"
    confined = blocked_then_allowed(place, command, lambda: "escaped" in target.read_text())
    assert confined["denial"] is not None and "link" in confined["denial"]


def test_a_key_in_ssh_is_unreadable_and_reported(place):
    result = place.run("cat ~/.ssh/id_ed25519", "workspace-write")
    assert result["exit_code"] != 0
    assert FAKE_KEY not in result["output"]
    assert "Permission denied" in result["output"]
    assert result["denial"] is not None and "hides" in result["denial"]
    assert FAKE_KEY in place.run("cat ~/.ssh/id_ed25519", "full")["output"]


def test_the_agents_store_is_unreadable(place):
    command = f"cat {place.store}/session.jsonl"
    result = place.run(command, "workspace-write")
    assert result["exit_code"] != 0 and STORE_TEXT not in result["output"]
    assert result["denial"] is not None
    assert STORE_TEXT in place.run(command, "full")["output"]


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[bytes]]]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                received.append(conn.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_connection_to_a_loopback_server_is_blocked_and_reported(place, loopback_server):
    port, received = loopback_server
    command = (
        f"{PYTHON} -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}),"
        " timeout=5); s.sendall(b'escaped'); s.close()\""
    )

    def reached() -> bool:
        deadline = time.monotonic() + 2
        while not received and time.monotonic() < deadline:
            time.sleep(0.02)
        return b"escaped" in received

    confined = place.run(command, "workspace-write")
    assert confined["exit_code"] != 0 and not received
    assert confined["denial"] is not None and "network" in confined["denial"]
    assert place.run(command, "full")["exit_code"] == 0 and reached()
    # The network, when the policy allows it, is the machine's.
    received.clear()
    allowed = place.run(command, {"network": True})
    assert allowed["exit_code"] == 0 and reached()


def test_a_fork_bomb_is_bounded_by_the_process_limit(place):
    if place.user == "this-user" and IS_ROOT:
        pytest.skip("the kernel exempts root from RLIMIT_NPROC (the nobody run tests it)")
    # A bomb bounded by construction (200 sleepers), so that full cannot take the
    # machine down; the limit, 64, is the policy's.
    command = "for i in $(seq 200); do sleep 3 & done; wait"
    limited = {"limits": {"processes": 64}}
    confined = place.run(command, limited)
    assert confined["exit_code"] != 0
    assert "fork" in confined["output"].lower()
    assert confined["denial"] is not None and "processes" in confined["denial"]
    assert place.run(command, "full")["exit_code"] == 0


def test_a_10_gb_file_is_stopped_by_the_file_size_limit(place):
    big = place.ws / "big"
    # Sparse: the limit stops the size, whatever the disk holds.
    confined = place.run("truncate -s 10G big", "workspace-write")
    assert confined["exit_code"] != 0
    assert not big.exists() or big.stat().st_size < 10 * 1024**3
    assert confined["denial"] is not None and "limit" in confined["denial"]
    assert place.run("truncate -s 10G big", "full")["exit_code"] == 0
    assert big.stat().st_size == 10 * 1024**3


def test_a_daemon_that_setsids_ends_with_the_call(place):
    survived = place.ws / "survived.txt"
    # The call returns only once the daemon is in its own session: otherwise a loaded
    # machine can end the call (and its process group) before setsid has run.
    command = (
        "rm -f started; setsid sh -c 'touch started; sleep 1; echo alive > survived.txt' "
        ">/dev/null 2>&1 & while [ ! -e started ]; do sleep 0.01; done"
    )
    assert place.run(command, "workspace-write")["exit_code"] == 0
    time.sleep(2)
    assert not survived.exists(), "a confined daemon outlived its call"
    assert place.run(command, "full")["exit_code"] == 0
    deadline = time.monotonic() + 20
    while not survived.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survived.exists(), "unconfined, the daemon should have outlived the call"


PTRACE = (
    f'{PYTHON} -c "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); '
    "r = libc.ptrace(0x4206, {agent}, 0, 0); "  # PTRACE_SEIZE: does not stop the agent
    "print('seized' if r == 0 else 'errno %d' % ctypes.get_errno()); sys.exit(r != 0)\""
)


def test_the_agent_cannot_be_ptraced(place):
    confined = place.run(PTRACE, "workspace-write")
    assert confined["exit_code"] != 0 and "seized" not in confined["output"]
    free = place.run(PTRACE, "full")
    assert free["exit_code"] == 0 and "seized" in free["output"]


def test_a_write_in_the_workspace_and_the_private_temp_works(place):
    result = place.run('echo ok > inside.txt && echo t > "$TMPDIR/t" && cat "$TMPDIR/t"', {})
    assert result["exit_code"] == 0 and result["output"].strip() == "t"
    assert (place.ws / "inside.txt").read_text() == "ok\n"


def test_git_is_read_only_unless_the_policy_says_so(place):
    git = place.ws / ".git"
    git.mkdir()
    if place.user == "nobody":
        os.lchown(git, NOBODY, NOBODY)
    blocked = place.run("echo '[core]' > .git/config", "workspace-write")
    assert blocked["exit_code"] != 0 and not (git / "config").exists()
    assert blocked["denial"] is not None and ".git" in blocked["denial"]
    allowed = place.run("echo '[core]' > .git/config", {"gitWritable": True})
    assert allowed["exit_code"] == 0 and (git / "config").exists()


def test_read_only_writes_nothing_but_the_private_temp(place):
    result = place.run("echo x > inside.txt", "read-only")
    assert result["exit_code"] != 0 and not (place.ws / "inside.txt").exists()
    assert place.run('echo x > "$TMPDIR/x"', "read-only")["exit_code"] == 0


def test_limits_json_is_checked_by_field():
    with pytest.raises(ValueError, match=r"sandbox.limits.processes must be a positive"):
        SandboxPolicy.from_json({"limits": {"processes": 0}})
    with pytest.raises(ValueError, match=r"sandbox.nope is not a field"):
        SandboxPolicy.from_json({"nope": 1})
    with pytest.raises(ValueError, match=r"sandbox must be one of"):
        SandboxPolicy.from_json("container")
    policy = SandboxPolicy.from_json({"limits": {"processes": 64}, "writable": ["/x"]})
    assert policy.limits == Limits(processes=64)
    assert SandboxPolicy.from_json(policy.to_json()) == policy


LATE_WRITE = "sh -c 'sleep 1; echo alive > late.txt' >/dev/null 2>&1 &"


async def test_a_timeout_ends_everything_in_the_sandbox(tmp_path):
    ws = DiskWorkspace([tmp_path], sandbox=Sandbox())
    result = await ws.run_command(f"{LATE_WRITE} sleep 30", timeout=0.3)
    assert result.timed_out and result.sandboxed
    await asyncio.sleep(2)
    assert not (tmp_path / "late.txt").exists()


async def test_a_cancelled_call_ends_everything_in_the_sandbox(tmp_path):
    ws = DiskWorkspace([tmp_path], sandbox=Sandbox())
    task = asyncio.create_task(ws.run_command(f"{LATE_WRITE} echo go > go.txt; sleep 30"))
    deadline = time.monotonic() + 10
    while not (tmp_path / "go.txt").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(2)
    assert not (tmp_path / "late.txt").exists()


async def test_no_sandbox_here_refuses_commands_unless_the_fallback_is_full(tmp_path, monkeypatch):
    from agent_host.session.errors import SandboxUnavailable
    from agent_host.session.sandbox import Mechanism, confine

    monkeypatch.setattr(confine, "mechanism", lambda: Mechanism(None, "bwrap is missing"))
    refused = DiskWorkspace([tmp_path], sandbox=Sandbox("workspace-write"))
    with pytest.raises(SandboxUnavailable, match=r"not run: .*bwrap is missing.*full"):
        await refused.run_command("echo ran > ran.txt")
    assert not (tmp_path / "ran.txt").exists()
    fallback = DiskWorkspace([tmp_path], sandbox=Sandbox(SandboxPolicy(fallback="full")))
    first = await fallback.run_command("echo ran")
    assert first.output.startswith("[not sandboxed: bwrap is missing")  # said once
    assert not first.sandboxed
    assert (await fallback.run_command("echo again")).output == "again\n"


async def test_the_agents_environment_is_out_of_reach(tmp_path):
    # The environment policy keeps the key from the command's own environment; an
    # agent's, in /proc, only the sandbox keeps away. The agent here: a process of
    # this user with a key in its environment (this one's /proc environ is the one
    # it started with).
    key = "sk-fake-sandbox-test-0123456789abcdef"
    agent = subprocess.Popen(["sleep", "60"], env={"OPENAI_API_KEY": key})
    try:
        command = f"tr '\\0' '\\n' < /proc/{agent.pid}/environ"
        confined = await DiskWorkspace([tmp_path], sandbox=Sandbox()).run_command(command)
        assert key not in confined.output and confined.exit_code != 0
        free = await DiskWorkspace([tmp_path], sandbox=Sandbox("full")).run_command(command)
        assert key in free.output
    finally:
        agent.kill()
        agent.wait()
