"""How long agent-host waits for a model, per provider: the settings, where each
comes from, and the arithmetic of the worst case.

Four settings, each declared once in :data:`SETTINGS` (its CLI flag, environment
variable, wire name and Python argument all come from its ``option``):

- ``first_byte_timeout``: seconds one attempt may wait for the response to begin
  (the HTTP response's first byte: a stalled endpoint accepts and never answers);
  it is retried, with backoff, up to ``retries`` times;
- ``timeout``: the idle bound, seconds the model may send nothing but keep-alives
  (the first token included, then between tokens); not retried;
- ``total_timeout``: seconds one model call may take in all, retries included;
- ``retries``: how many times a failed attempt is tried again.

A value is a number (every provider) or per provider: ``"20,ollama=90"`` as text,
``{"*": 20, "ollama": 90}`` as an object. For a provider, the first found of: the
given value for it, the environment's for it, the given value for all, the
environment's for all, its row's default (:attr:`.registry.Provider.limits`), the
setting's default. "Given" is the flag, ``initializationOptions``, ACP's
``_meta`` or ``AgentHost(...)``'s argument, whichever started the engine.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Mapping
from typing import Any

import attrs

from .errors import ModelConfigError

ALL = "*"
"""The scope of a value for every provider."""
RETRY_INITIAL_DELAY = 0.5
"""Seconds before the first retry; each next one doubles, up to MAX_RETRY_DELAY."""
MAX_RETRY_DELAY = 8.0
MAX_RETRIES = 20
WAIT_NOTICE_AFTER = 5.0
"""Seconds a call waits for its answer before the user is told it is waiting."""
WAIT_NOTICE_EVERY = 10.0
"""And then again every this many seconds while it still waits."""
STALL_REPORTED_WITHIN = 60.0
"""What the defaults promise: a stalled endpoint is an error within this (tested)."""


@attrs.frozen
class Setting:
    name: str
    """The field of :class:`Limits`."""
    option: str
    """``AgentHost``'s argument; the flag, variable and wire name derive from it."""
    default: float
    what: str
    integer: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.option.replace("_", "-")

    @property
    def env(self) -> str:
        return "AGENT_HOST_" + self.option.upper()

    @property
    def wire(self) -> str:
        """Its key in ``initializationOptions`` and in ACP's ``_meta["agent-host"]``."""
        head, *rest = self.option.split("_")
        return head + "".join(p.title() for p in rest)

    @property
    def hint(self) -> str:
        """Where to change it, as an error message says."""
        return f"{self.flag}, {self.env}, {self.wire} or {self.option} to change"


FIRST_BYTE = Setting(
    "first_byte_timeout",
    "model_first_byte_timeout",
    15.0,
    "seconds one attempt at a model call may wait for the response to begin before it is retried",
)
IDLE = Setting(
    "timeout",
    "model_timeout",
    120.0,
    "seconds a model call may send nothing but keep-alives, the first token included, "
    "before the turn fails",
)
TOTAL = Setting(
    "total_timeout", "model_total_timeout", 1200.0, "seconds one model call may take in all"
)
RETRIES = Setting(
    "retries",
    "model_retries",
    2,
    "how many times a model call that failed before answering is tried again",
    integer=True,
)
SETTINGS: tuple[Setting, ...] = (FIRST_BYTE, IDLE, TOTAL, RETRIES)
BY_NAME = {s.name: s for s in SETTINGS}
BY_OPTION = {s.option: s for s in SETTINGS}


@attrs.frozen
class Limits:
    """The settings as they apply to one provider."""

    first_byte_timeout: float = FIRST_BYTE.default
    timeout: float = IDLE.default
    total_timeout: float = TOTAL.default
    retries: int = int(RETRIES.default)

    @property
    def first_byte_bound(self) -> float:
        """What an attempt waits for the response to begin: the idle bound counts
        from the request too, so the smaller of the two."""
        return min(self.first_byte_timeout, self.timeout)

    def stall_bound(self) -> float:
        """The most seconds a stalled endpoint (it accepts and never answers) takes
        to become an error: every attempt waits its first-byte bound, with the
        longest backoff between them; the whole-call limit caps it."""
        waits = (self.retries + 1) * self.first_byte_bound
        pauses = sum(longest_backoff(n) for n in range(1, self.retries + 1))
        return min(waits + pauses, self.total_timeout)


def longest_backoff(retry: int, initial_delay: float = RETRY_INITIAL_DELAY) -> float:
    """Seconds before retry number ``retry`` (1-based) at most: doubling, capped."""
    return min(initial_delay * 2 ** (retry - 1), MAX_RETRY_DELAY)


def backoff(retry: int, initial_delay: float = RETRY_INITIAL_DELAY) -> float:
    """The pause before retry ``retry``: the longest, less up to 25% of jitter so
    many clients don't retry in lockstep."""
    return longest_backoff(retry, initial_delay) * (1 - 0.25 * random.random())


# -- values as given: a number, text or an object, for all providers or some


def provider_scopes() -> tuple[str, ...]:
    """The scopes a per-provider value may name: ``openai``, ``ollama``..."""
    # Imported here: the registry imports the openers, which import this module.
    from .registry import PROVIDERS

    return tuple(p.prefix.rstrip("/:") for p in PROVIDERS)


def row_defaults(setting: Setting) -> dict[str, float]:
    """The providers whose row sets ``setting`` otherwise, and to what."""
    from .registry import PROVIDERS

    return {
        p.prefix.rstrip("/:"): p.limits[setting.name] for p in PROVIDERS if setting.name in p.limits
    }


def parse(setting: Setting, value: Any, where: str) -> dict[str, float]:
    """``value`` (None, a number, ``"20,ollama=90"``, ``{"*": 20, "ollama": 90}``)
    as ``{scope: number}``; ModelConfigError naming ``where`` if it is not one."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, str):
        items = []
        for part in filter(None, (p.strip() for p in value.split(","))):
            scope, equals, number = part.rpartition("=")
            items.append((scope.strip() if equals else ALL, number.strip()))
        if not items:
            raise _bad(setting, value, where)
    else:
        items = [(ALL, value)]
    parsed: dict[str, float] = {}
    scopes = provider_scopes()
    for scope, raw in items:
        key = scope.rstrip("/:") or ALL
        if key not in (ALL, *scopes):
            raise ModelConfigError(
                f"{where}: unknown provider {scope!r}; use one of {', '.join(scopes)} "
                f"(or a plain number for all)"
            )
        parsed[key] = _number(setting, raw, value, where)
    return parsed


def _number(setting: Setting, raw: Any, whole: Any, where: str) -> float:
    if isinstance(raw, str):
        try:
            raw = float(raw)
        except ValueError:
            raise _bad(setting, whole, where) from None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise _bad(setting, whole, where)
    if setting.integer:
        if raw != int(raw) or not 0 <= raw <= MAX_RETRIES:
            raise _bad(setting, whole, where)
        return int(raw)
    if not 0 < raw < 1e9:
        raise _bad(setting, whole, where)
    return float(raw)


def _bad(setting: Setting, value: Any, where: str) -> ModelConfigError:
    what = (
        f"a whole number from 0 to {MAX_RETRIES}"
        if setting.integer
        else "a positive number of seconds"
    )
    return ModelConfigError(
        f"{where} must be {what}, or per provider such as '20,ollama=90', not {value!r}"
    )


Given = Mapping[str, Mapping[str, float]]
"""Parsed values by setting name (``first_byte_timeout``...), each ``{scope: number}``."""


def given(values: Mapping[str, Any], *, names: Mapping[str, str] | None = None) -> Given:
    """Parse each setting's value from ``values`` (keyed by setting name); an error
    names it as ``names`` says (default: its ``option``)."""
    out: dict[str, dict[str, float]] = {}
    for name, value in values.items():
        setting = BY_NAME[name]
        where = (names or {}).get(name, setting.option)
        parsed = parse(setting, value, where)
        if parsed:
            out[name] = parsed
    return out


def from_environment(environ: Mapping[str, str] | None = None) -> Given:
    """The settings the environment gives (``AGENT_HOST_MODEL_FIRST_BYTE_TIMEOUT``...)."""
    environ = os.environ if environ is None else environ
    found = {s.name: environ[s.env] for s in SETTINGS if environ.get(s.env, "").strip()}
    return given(found, names={s.name: s.env for s in SETTINGS})


def resolve(
    scope: str,
    explicit: Given,
    environment: Given,
    row_defaults: Mapping[str, float] | None = None,
) -> Limits:
    """The limits for the provider ``scope`` (``openai``...): per provider before
    for all, what was given before the environment, then the row's default and the
    setting's."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        mine, env = explicit.get(setting.name, {}), environment.get(setting.name, {})
        for source in (mine.get(scope), env.get(scope), mine.get(ALL), env.get(ALL)):
            if source is not None:
                values[setting.name] = source
                break
        else:
            values[setting.name] = (row_defaults or {}).get(setting.name, setting.default)
    values["retries"] = int(values["retries"])
    return Limits(**values)


def provider_keywords(**options: Any) -> dict[str, Any]:
    """``open_provider``'s keywords from AgentHost's arguments (``model_timeout=``...;
    None is unset), checked now: ModelConfigError names the argument, or the
    environment variable, that is not a valid value."""
    values = {BY_OPTION[k].name: v for k, v in options.items()}
    given(values)
    from_environment()
    return {_KEYWORDS.get(n, n): v for n, v in values.items() if v is not None}


_KEYWORDS = {"retries": "max_retries"}


def seconds(value: float) -> str:
    """``4``, ``0.5``, ``1.2``: how many seconds, as a message says it."""
    return f"{value:.1f}".rstrip("0").rstrip(".") if value < 10 else f"{value:.0f}"
