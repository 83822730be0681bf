"""What a model call cost, in USD, from its token counts.

The table holds *list prices* per million tokens as published by OpenAI and
Anthropic (last checked 2025); they change, and discounts (cached input, batch)
are not modelled, so treat the result as an estimate. Callers can pass
``overrides`` for their own prices or models the table lacks. Local and scripted
models cost nothing.

What a call cost (:func:`usage_event`) is what the provider reported, if it did
(a LiteLLM proxy does), else the table's figure, else unknown: ``None``, never a
silent 0, with a warning once per model so the user learns how to add a price.
A session's total (:func:`total_cost`) is unknown as soon as one call's is.

A model name is matched by: its exact ``provider/model`` name, then its bare model
name, then the longest table entry it starts with (at a ``-``, ``:`` or ``@``
boundary), so dated variants such as ``gpt-4.1-mini-2025-04-14`` price as
``gpt-4.1-mini`` and never as ``gpt-4.1``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from . import events as ev
from .errors import InvalidArgument
from .model import UsageReport
from .providers.registry import FREE_PREFIXES

log = logging.getLogger(__name__)


@attrs.frozen
class Price:
    """USD per million tokens."""

    input_per_mtok: float
    output_per_mtok: float

    @classmethod
    def coerce(cls, value: Any) -> Price:
        """A Price from a Price, an ``(input, output)`` pair, or a mapping with
        ``input``/``output`` (or ``input_per_mtok``/``output_per_mtok``) keys, as a
        config file would give it."""
        if isinstance(value, Price):
            return value
        if isinstance(value, Mapping):
            inp = value.get("input_per_mtok", value.get("input"))
            out = value.get("output_per_mtok", value.get("output"))
        elif isinstance(value, list | tuple) and len(value) == 2:
            inp, out = value
        else:
            raise InvalidArgument(
                f"a price is (input, output) USD per million tokens, not {value!r}"
            )
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (inp, out)):
            raise InvalidArgument(
                f"a price is (input, output) USD per million tokens, not {value!r}"
            )
        return cls(float(inp), float(out))


FREE = Price(0.0, 0.0)

# List prices, USD per million tokens (input, output). May be out of date.
PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4-turbo": Price(10.00, 30.00),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "o1": Price(15.00, 60.00),
    "o1-mini": Price(1.10, 4.40),
    "o3": Price(2.00, 8.00),
    "o3-pro": Price(20.00, 80.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    # Anthropic
    "claude-opus-4-5": Price(5.00, 25.00),
    "claude-opus-4-1": Price(15.00, 75.00),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-3-5-sonnet": Price(3.00, 15.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-3-opus": Price(15.00, 75.00),
    "claude-3-haiku": Price(0.25, 1.25),
}

_BOUNDARIES = "-:@"


def price_of(model: str, overrides: Mapping[str, Any] | None = None) -> Price | None:
    """The price for ``model``, overrides first; None when nothing matches."""
    if overrides:
        found = _match(model, {name: Price.coerce(p) for name, p in overrides.items()})
        if found is not None:
            return found
    if model.startswith(FREE_PREFIXES):
        return FREE
    return _match(model, PRICES)


def known_price(model: str, overrides: Mapping[str, Any] | None = None) -> bool:
    """Whether the table (or ``overrides``) has a price for ``model``."""
    return price_of(model, overrides) is not None


def cost(
    model: str,
    input_tokens: int,
    output_tokens: int,
    overrides: Mapping[str, Any] | None = None,
) -> float | None:
    """USD for one call by the table; None for a model without a price."""
    price = price_of(model, overrides)
    if price is None:
        return None
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6


def usage_event(
    model: str, report: UsageReport, overrides: Mapping[str, Any] | None = None
) -> ev.Usage:
    """The log's record of one model call, priced: the provider's reported cost,
    else the table's (``overrides`` first), else None and a warning (once per model)."""
    money = report.cost
    if money is None:
        money = cost(model, report.input_tokens, report.output_tokens, overrides)
    if money is None:
        _warn_unpriced(model)
    return ev.Usage(
        input_tokens=report.input_tokens,
        output_tokens=report.output_tokens,
        cost=money,
        model=model,
    )


def total_cost(events: Iterable[ev.Event]) -> float | None:
    """USD of the ``Usage`` events among ``events``; None when any of them is
    unknown, since a partial sum would pass for the whole."""
    total = 0.0
    for event in events:
        if type(event) is ev.Usage:
            if event.cost is None:
                return None
            total += event.cost
    return total


_warned: set[str] = set()
"""Models already warned about in this process: once each is enough."""


def _warn_unpriced(model: str) -> None:
    if model in _warned:
        return
    _warned.add(model)
    log.warning(
        "No price known for model %r, so its cost is shown as unknown. To price it, pass "
        "AgentHost(prices={%r: (input, output)}) in USD per million tokens, or use a "
        "provider that reports each call's cost (a LiteLLM proxy does).",
        model,
        model,
    )


def _match(model: str, table: Mapping[str, Price]) -> Price | None:
    for name in _candidates(model):
        if name in table:
            return table[name]
    for name in _candidates(model):
        best = max((key for key in table if _extends(name, key)), key=len, default=None)
        if best is not None:
            return table[best]
    return None


def _candidates(model: str) -> list[str]:
    """``litellm_proxy/openai/gpt-4.1`` -> itself, ``openai/gpt-4.1``, ``gpt-4.1``."""
    names = [model]
    rest = model
    while "/" in rest:
        rest = rest.split("/", 1)[1]
        names.append(rest)
    return names


def _extends(name: str, key: str) -> bool:
    return len(name) > len(key) and name.startswith(key) and name[len(key)] in _BOUNDARIES
