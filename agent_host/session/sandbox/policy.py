"""The sandbox policy: what a command (and a stdio MCP server) may write, read and
reach, and the resources it may use. Data only; :mod:`.bwrap` applies it.

Three modes, after Codex's: ``read-only`` (write nothing but the private temp),
``workspace-write`` (the default: also the session's roots and the paths the user
added) and ``full`` (no sandbox: as the user, as before). Under the first two a
command reads everything but the deny list (:func:`default_deny`: keys,
credentials, keyrings, the agent's own store and config), has no network unless
``network`` says so, and runs under resource limits.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

import attrs

from ..errors import SandboxConfigError

SandboxMode = Literal["read-only", "workspace-write", "full"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
Fallback = Literal["refuse", "full"]

GiB = 1024**3

SECRET_PLACES: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pgpass",
    "~/.npmrc",
    "~/.pypirc",
    "~/.config/gh",
    "~/.local/share/keyrings",
    "~/.password-store",
    "~/.config/agent-host",
    "~/.local/share/agent-host",
)
"""Unreadable under a confining policy (those that exist when a command starts)."""


@attrs.frozen
class Limits:
    """Per-process resource limits (setrlimit) of a confined command; None: none."""

    processes: int | None = 2048
    """RLIMIT_NPROC: bounds a fork bomb. The kernel exempts root from it (as root, the
    pid namespace still ends them all with the call)."""
    memory_bytes: int | None = 8 * GiB
    """RLIMIT_DATA (the heap and private writable mappings, not reserved address
    space, so runtimes that reserve large ranges still start)."""
    file_size_bytes: int | None = 4 * GiB
    """RLIMIT_FSIZE: the largest file a command may write (EFBIG past it)."""
    cpu_seconds: int | None = 3600
    """RLIMIT_CPU, per process."""

    @classmethod
    def from_json(cls, data: object, where: str) -> Limits:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise SandboxConfigError(f"{where} must be an object")
        names = {
            "processes": "processes",
            "memoryBytes": "memory_bytes",
            "fileSizeBytes": "file_size_bytes",
            "cpuSeconds": "cpu_seconds",
        }
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise SandboxConfigError(
                f"{where}.{unknown[0]} is not a field (known: {', '.join(names)})"
            )
        values: dict[str, int | None] = {}
        for key, attr in names.items():
            if key in data:
                value = data[key]
                if value is not None and (
                    not isinstance(value, int) or isinstance(value, bool) or value <= 0
                ):
                    raise SandboxConfigError(f"{where}.{key} must be a positive integer or null")
                values[attr] = value
        return cls(**values)


def _paths(value: Any) -> tuple[str, ...]:
    return tuple(str(p) for p in value)


@attrs.frozen
class SandboxPolicy:
    mode: SandboxMode = "workspace-write"
    writable: tuple[str, ...] = attrs.field(default=(), converter=_paths)
    """More paths a command may write (workspace-write), besides the session's roots
    and the private temp."""
    deny: tuple[str, ...] = attrs.field(default=(), converter=_paths)
    """More paths made unreadable, besides :data:`SECRET_PLACES`."""
    network: bool = False
    """Whether a confined command may use the network (off: a network namespace of
    its own, with only a loopback of its own)."""
    git_writable: bool = False
    """Whether ``.git`` inside a writable root may be written (off, as in Codex: a
    hook or ``.git/config`` written by a command runs later, unconfined)."""
    limits: Limits = Limits()
    fallback: Fallback = "refuse"
    """Where no mechanism can confine commands: ``refuse`` them (the default), or
    run them as under ``full`` (said once, in the log and the command's output)."""

    @property
    def confined(self) -> bool:
        return self.mode != "full"

    def with_mode(self, mode: str) -> SandboxPolicy:
        return attrs.evolve(self, mode=check_mode(mode))

    def to_json(self) -> dict[str, Any]:
        """The JSON form :meth:`from_json` reads back."""
        limits = self.limits
        return {
            "mode": self.mode,
            "writable": list(self.writable),
            "deny": list(self.deny),
            "network": self.network,
            "gitWritable": self.git_writable,
            "limits": {
                "processes": limits.processes,
                "memoryBytes": limits.memory_bytes,
                "fileSizeBytes": limits.file_size_bytes,
                "cpuSeconds": limits.cpu_seconds,
            },
            "fallback": self.fallback,
        }

    @classmethod
    def from_json(cls, data: object, where: str = "sandbox") -> SandboxPolicy:
        """A mode's name, or ``{"mode", "writable", "deny", "network", "gitWritable",
        "limits", "fallback"}`` (every key optional); SandboxConfigError naming the
        field for anything else."""
        if data is None:
            return cls()
        if isinstance(data, str):
            return cls(mode=check_mode(data, where))
        if not isinstance(data, Mapping):
            raise SandboxConfigError(f"{where} must be a mode name or an object")
        known = ("mode", "writable", "deny", "network", "gitWritable", "limits", "fallback")
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise SandboxConfigError(
                f"{where}.{unknown[0]} is not a field (known: {', '.join(known)})"
            )
        for key in ("writable", "deny"):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
                raise SandboxConfigError(f"{where}.{key} must be a list of paths")
        for key in ("network", "gitWritable"):
            if not isinstance(data.get(key, False), bool):
                raise SandboxConfigError(f"{where}.{key} must be true or false")
        fallback = data.get("fallback", "refuse")
        if fallback not in get_args(Fallback):
            raise SandboxConfigError(f"{where}.fallback must be refuse or full")
        return cls(
            mode=check_mode(data.get("mode", "workspace-write"), f"{where}.mode"),
            writable=data.get("writable", []),
            deny=data.get("deny", []),
            network=data.get("network", False),
            git_writable=data.get("gitWritable", False),
            limits=Limits.from_json(data.get("limits"), f"{where}.limits"),
            fallback=fallback,
        )


def check_mode(value: object, where: str = "sandbox") -> SandboxMode:
    if value not in SANDBOX_MODES:
        raise SandboxConfigError(
            f"{where} must be one of {', '.join(SANDBOX_MODES)}; got {value!r}"
        )
    return value


def as_sandbox_policy(value: SandboxPolicy | str | Mapping[str, Any] | None) -> SandboxPolicy:
    """A policy, a mode's name or the JSON form (SandboxConfigError if bad); None:
    the default, ``workspace-write``, or the environment's ``AGENT_HOST_SANDBOX``."""
    if isinstance(value, SandboxPolicy):
        return value
    if value is None:
        value = os.environ.get("AGENT_HOST_SANDBOX") or None
    return SandboxPolicy.from_json(value)


def deny_paths(policy: SandboxPolicy, extra: tuple[Path, ...] = ()) -> list[Path]:
    """The places made unreadable: the defaults, the policy's, ``extra`` (the host's
    own store), expanded and made absolute; only those that exist now."""
    out: list[Path] = []
    for raw in (*SECRET_PLACES, *policy.deny, *map(str, extra)):
        path = Path(os.path.abspath(os.path.expanduser(raw)))
        if path not in out and os.path.lexists(path):
            out.append(path)
    return out
