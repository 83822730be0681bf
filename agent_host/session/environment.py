"""What environment the commands the agent runs, and the MCP servers it starts, see.

Like Codex's ``shell_environment_policy``: by default they get this process's
environment minus anything that looks like a secret (names matching ``*KEY*``,
``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``) and minus the model
providers' key variables -- a command the model wrote must not be able to print
the key the host talks to the model with. :class:`EnvironmentPolicy` tunes that:
``include`` keeps names the defaults would drop, ``exclude`` drops more, ``set``
forces values.

The policy in force is the one of the host whose turn runs the command (it sets
:data:`current_policy` around its turns), so workspaces made by a front end need
no wiring of their own; outside a host, the default policy applies.
"""

from __future__ import annotations

import contextvars
import fnmatch
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

from .errors import AgentHostError
from .providers import registry as providers
from .redaction import SECRETS, looks_like_token

DEFAULT_EXCLUDES: tuple[str, ...] = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*")
"""Name patterns (case-insensitive, fnmatch) dropped unless ``include`` keeps them."""

PROVIDER_KEYS = providers.PROVIDER_KEYS
"""The variables the model providers read their keys from (each row of the provider
registry names its own). Dropped unless ``include`` names one exactly: a wildcard
include (``*``) must not hand commands the model's key by accident."""


class ShellEnvironmentError(AgentHostError, ValueError):
    """A shell environment policy that cannot be used; the message names the field
    (``shellEnvironment.set.FOO must be a string``), never a value."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field


def _upper(patterns: Any) -> tuple[str, ...]:
    return tuple(p.upper() for p in patterns)


@attrs.frozen
class EnvironmentPolicy:
    include: tuple[str, ...] = attrs.field(default=(), converter=_upper)
    """Name patterns kept even if they match :data:`DEFAULT_EXCLUDES`."""
    exclude: tuple[str, ...] = attrs.field(default=(), converter=_upper)
    """More name patterns removed; they win over ``include``."""
    set: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    """Names forced to these values, whatever the other rules say."""

    def apply(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``environ`` as a command under this policy sees it. The values it drops
        join the secret registry: a command can still find them (in
        ``/proc/$PPID/environ``, say) and print them, and then they are masked."""
        out = {}
        dropped = []
        for name, value in environ.items():
            if self.drops(name):
                dropped.append(value)
            else:
                out[name] = value
                SECRETS.add_url(value)  # DATABASE_URL=postgres://u:PASSWORD@...
        out.update(self.set)
        for value in dropped:
            SECRETS.add(value, fragments=looks_like_token(value))
        return out

    def drops(self, name: str) -> bool:
        """Whether a variable of this name is kept from commands."""
        upper = name.upper()
        if _matches(upper, self.exclude):
            return True
        if upper in PROVIDER_KEYS and upper not in self.include:
            return True
        return looks_secret(upper) and not _matches(upper, self.include)

    def register_secrets(self) -> None:
        """Into the registry now (a host does this as it starts, before any command
        ran): the values of this process's variables that this policy or the
        default one drops -- a token ``include`` hands to commands is still masked
        in what they print."""
        for name, value in os.environ.items():
            if self.drops(name) or DEFAULT_POLICY.drops(name):
                SECRETS.add(value, fragments=looks_like_token(value))
            SECRETS.add_url(value)

    def environment(self) -> dict[str, str]:
        """This process's environment, now, under the policy."""
        return self.apply(os.environ)

    @classmethod
    def from_json(cls, data: object, where: str = "shellEnvironment") -> EnvironmentPolicy:
        """``{"include": [...], "exclude": [...], "set": {...}}``, every key optional;
        ShellEnvironmentError naming the field for anything else."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ShellEnvironmentError(where, "must be an object")
        unknown = sorted(set(data) - {"include", "exclude", "set"})
        if unknown:
            raise ShellEnvironmentError(
                f"{where}.{unknown[0]}", "is not a field (known: include, exclude, set)"
            )
        include = _patterns(data.get("include"), f"{where}.include")
        exclude = _patterns(data.get("exclude"), f"{where}.exclude")
        forced = data.get("set") or {}
        if not isinstance(forced, Mapping):
            raise ShellEnvironmentError(f"{where}.set", "must be an object of name: value")
        for name, value in forced.items():
            if not isinstance(name, str) or not name or "=" in name or "\0" in name:
                raise ShellEnvironmentError(f"{where}.set", f"has a bad variable name {name!r}")
            if not isinstance(value, str) or "\0" in value:
                raise ShellEnvironmentError(f"{where}.set.{name}", "must be a string")
        return cls(include=include, exclude=exclude, set=forced)


DEFAULT_POLICY = EnvironmentPolicy()


def as_policy(value: EnvironmentPolicy | Mapping[str, Any] | None) -> EnvironmentPolicy:
    """A policy, or its JSON form (ShellEnvironmentError if bad), or None: the default."""
    if value is None:
        return DEFAULT_POLICY
    if isinstance(value, EnvironmentPolicy):
        return value
    return EnvironmentPolicy.from_json(value)


current_policy: contextvars.ContextVar[EnvironmentPolicy] = contextvars.ContextVar(
    "agent_host_shell_environment", default=DEFAULT_POLICY
)
"""The policy of the host whose turn is running; tasks the turn starts (an MCP
server's owner task) inherit it."""


@contextmanager
def using_policy(policy: EnvironmentPolicy) -> Iterator[None]:
    token = current_policy.set(policy)
    try:
        yield
    finally:
        current_policy.reset(token)


def looks_secret(name: str) -> bool:
    """Whether a variable name matches :data:`DEFAULT_EXCLUDES` (``*TOKEN*``...)."""
    return _matches(name.upper(), DEFAULT_EXCLUDES) or name.upper() in PROVIDER_KEYS


def _matches(upper: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(upper, p) for p in patterns)


def _patterns(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) and p for p in value):
        raise ShellEnvironmentError(where, "must be a list of name patterns (strings)")
    return tuple(value)
