"""A host's (or a session's) sandbox: its policy, the places it hides, its private
temp folder, and how a command is launched under it.

The sandbox in force is the one of the host whose turn runs the command (set in
:data:`current_sandbox` around its turns, as the environment policy is), so
workspaces made by a front end need no wiring; outside a host, the default
(``workspace-write``, or ``AGENT_HOST_SANDBOX``).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import shutil
import stat
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs

from ..errors import SandboxUnavailable
from .bwrap import bwrap_argv, prlimit_argv, set_limits
from .denial import sandbox_denial
from .detect import mechanism
from .policy import SandboxPolicy, as_sandbox_policy, deny_paths

log = logging.getLogger(__name__)


@attrs.frozen
class Launch:
    """How to start one command: its argv, environment and pre-exec hook."""

    argv: list[str]
    env: dict[str, str]
    preexec: Callable[[], None] | None = None
    confined: bool = False
    note: str | None = None
    """Said in the command's output: why it ran unconfined though a confining
    policy is in force (the configured fallback)."""
    policy: SandboxPolicy = SandboxPolicy(mode="full")
    hidden: tuple[Path, ...] = ()

    def denial(self, output: str, exit_code: int | None) -> str | None:
        """Why the sandbox stopped the command, if it looks like it did."""
        if not self.confined:
            return None
        return sandbox_denial(output, exit_code, self.policy, self.hidden)


class Sandbox:
    """A policy put to work. ``hide``: more places to make unreadable (the host's
    own store)."""

    def __init__(self, policy: SandboxPolicy | str | None = None, *, hide: Sequence[Path] = ()):
        self.policy = as_sandbox_policy(policy)
        self.hide = tuple(Path(p) for p in hide)
        self._lock = threading.Lock()
        self._base: Path | None = None
        self._told_fallback = False
        self._finalizer: weakref.finalize | None = None

    def __repr__(self) -> str:
        return f"Sandbox({self.policy.mode!r})"

    def with_policy(self, policy: SandboxPolicy | str) -> Sandbox:
        """Another sandbox hiding the same places, under ``policy`` (or this
        policy in another mode)."""
        chosen = self.policy.with_mode(policy) if isinstance(policy, str) else policy
        return Sandbox(chosen, hide=self.hide)

    def launch(
        self,
        command: Sequence[str],
        *,
        roots: Sequence[Path],
        cwd: Path,
        env: Mapping[str, str],
        preexec: bool = True,
    ) -> Launch:
        """``command`` as it is to be started; SandboxUnavailable when it must be
        confined and cannot be (and the policy's fallback is ``refuse``).
        The limits are set by util-linux's ``prlimit`` inside the sandbox; without
        it, by the Launch's pre-exec hook if ``preexec`` (False: a spawn that takes
        no hook, which then runs without them, logged)."""
        policy = self.policy
        if not policy.confined:
            return Launch(list(command), dict(env), policy=policy)
        found = mechanism()
        if not found.available:
            if policy.fallback != "full":
                raise SandboxUnavailable(
                    f"this command was not run: the sandbox policy is {policy.mode} and "
                    f"commands cannot be sandboxed here ({found.reason}). Ask the user to "
                    "install bubblewrap, or to choose the sandbox full (no sandbox) or a "
                    "fallback of full."
                )
            note = None
            if not self._told_fallback:
                self._told_fallback = True
                note = f"[not sandboxed: {found.reason}; running unconfined, as configured]"
            return Launch(list(command), dict(env), note=note, policy=policy)
        assert found.path is not None
        base = self._folder()
        temp = base / "tmp"
        writable = [temp]
        if policy.mode == "workspace-write":
            writable += [Path(os.path.realpath(r)) for r in roots]
            for extra in policy.writable:
                path = Path(os.path.realpath(os.path.expanduser(extra)))
                if path.exists():
                    writable.append(path)
        # A hidden place that holds a writable root (a store folder the session
        # works inside) stays visible: the user chose to work there.
        hidden = tuple(
            p
            for p in deny_paths(policy, self.hide)
            if not any(w.is_relative_to(p) for w in writable)
        )
        # prlimit inside (one small exec) rather than a pre-exec hook, which makes
        # Python fork the whole host instead of vfork-ing it: cheaper per command.
        limiter = _prlimit()
        hook = None
        if limiter is not None:
            command = [*prlimit_argv(limiter, policy.limits), *command]
        elif preexec:
            hook = set_limits(policy.limits)
        else:
            log.warning("prlimit (util-linux) is missing: %s runs without limits", command[0])
        argv = bwrap_argv(
            found.path,
            policy,
            writable=writable,
            deny=hidden,
            denied_file=base / "denied-file",
            denied_folder=base / "denied-folder",
            cwd=cwd,
            command=command,
        )
        environ = dict(env)
        environ["TMPDIR"] = str(temp)
        return Launch(
            argv,
            environ,
            preexec=hook,
            confined=True,
            policy=policy,
            hidden=hidden,
        )

    def close(self) -> None:
        """Remove the private temp folder (what commands left there goes with it)."""
        with self._lock:
            finalizer, self._finalizer, self._base = self._finalizer, None, None
        if finalizer is not None:
            finalizer()

    def _folder(self) -> Path:
        with self._lock:
            if self._base is None or not self._base.is_dir():
                base = Path(tempfile.mkdtemp(prefix="agent-host-sandbox-"))
                (base / "tmp").mkdir(mode=0o700)
                (base / "denied-folder").mkdir(mode=0o000)
                (base / "denied-file").touch(mode=0o000)
                os.chmod(base / "denied-folder", 0o000)
                os.chmod(base / "denied-file", 0o000)
                self._base = base
                self._finalizer = weakref.finalize(self, _remove, base)
            return self._base


@functools.cache
def _prlimit() -> str | None:
    return shutil.which("prlimit")


def _remove(base: Path) -> None:
    def writable_again(function: object, path: str, exc: object) -> None:
        # A command may leave read-only folders (a Go module cache does).
        try:
            os.chmod(os.path.dirname(path), stat.S_IRWXU)
            os.chmod(path, stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass

    shutil.rmtree(base, onerror=writable_again)


_default: Sandbox | None = None


def default_sandbox() -> Sandbox:
    """The sandbox outside any host's turn (the default policy, made once)."""
    global _default
    if _default is None:
        _default = Sandbox()
    return _default


current_sandbox: contextvars.ContextVar[Sandbox | None] = contextvars.ContextVar(
    "agent_host_sandbox", default=None
)
"""The sandbox of the host (or session) whose turn is running; None: the default."""


_unconfined: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "agent_host_unconfined", default=False
)
_UNCONFINED = Sandbox(SandboxPolicy(mode="full"))


def sandbox_in_force(own: Sandbox | None = None) -> Sandbox:
    """The sandbox a command starts in: none inside :func:`unconfined`, else
    ``own`` (a workspace's), else the current host's, else the default."""
    if _unconfined.get():
        return _UNCONFINED
    return own or current_sandbox.get() or default_sandbox()


@contextmanager
def unconfined() -> Iterator[None]:
    """Commands started inside run without the sandbox (what the user approved
    for a command the sandbox stopped)."""
    token = _unconfined.set(True)
    try:
        yield
    finally:
        _unconfined.reset(token)


current_roots: contextvars.ContextVar[tuple[Path, ...]] = contextvars.ContextVar(
    "agent_host_sandbox_roots", default=()
)
"""The folders of the session whose turn is running: what a stdio MCP server it
starts may write under workspace-write (commands are told their roots)."""


@contextmanager
def using_sandbox(sandbox: Sandbox, roots: Sequence[Path] = ()) -> Iterator[None]:
    token = current_sandbox.set(sandbox)
    roots_token = current_roots.set(tuple(roots))
    try:
        yield
    finally:
        current_roots.reset(roots_token)
        current_sandbox.reset(token)
