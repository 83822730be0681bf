"""What bench_store.py's benchmarks share: the turn they store, the table they print,
and the round-robin runner that times them."""

from __future__ import annotations

import gc
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench_common import fmt_ms, quantile

from agent_host.session.events import AssistantMessage, ToolCall, ToolResult, UserPrompt

try:
    from agents.memory import SQLiteSession  # noqa: F401 - for P1 and P2
except ImportError:  # pragma: no cover - the peer is the "bench" extra
    sys.exit("the peer is missing: pip install -e '.[bench]' (openai-agents)")

# --------------------------------------------------------------------------- data

_rng = random.Random(1234)
_WORDS = (
    "def return self value None import from class if else for in while try except "
    "raise with as async await lambda yield assert pass break continue path data "
    "items result config session event store append read list index offset"
).split()


def _code_like(n: int, rng: random.Random) -> str:
    """About ``n`` characters of source-looking text (newlines, indents, quotes)."""
    lines, size = [], 0
    while size < n:
        indent = "    " * rng.randrange(3)
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 9)))
        line = f'{indent}{words}("{rng.choice(_WORDS)}")'
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:n]


TOOL_OUTPUT = _code_like(1024, _rng)  # the 1 KB tool result


def _texts(i: int) -> tuple[str, str, dict, str, str]:
    path = f"src/pkg/module_{i % 97}.py"
    prompt = f"Turn {i}: the test for {path} fails with a KeyError; please find out why and fix it."
    answer = (
        f"I read {path}. The KeyError comes from line {i % 300 + 1}, where the lookup "
        "assumes the key was set by the constructor; I changed it to use .get() with a default."
    )
    return prompt, f"call_{i:06d}", {"path": path}, TOOL_OUTPUT, answer


def turn_events(i: int) -> list:
    prompt, call_id, args, output, answer = _texts(i)
    return [
        UserPrompt(text=prompt),
        ToolCall(call_id=call_id, name="read_file", arguments=args),
        ToolResult(call_id=call_id, output=output),
        AssistantMessage(text=answer),
    ]


def turn_items(i: int) -> list[dict]:
    """The same turn in OpenAI Responses input format, as the peer stores it."""
    prompt, call_id, args, output, answer = _texts(i)
    return [
        {"role": "user", "content": prompt},
        {
            "type": "function_call",
            "call_id": call_id,
            "name": "read_file",
            "arguments": json.dumps(args),
        },
        {"type": "function_call_output", "call_id": call_id, "output": output},
        {"role": "assistant", "content": answer},
    ]


# --------------------------------------------------------------------------- stats


@dataclass
class Samples:
    name: str
    times: list[float] = field(default_factory=list)

    def q(self, frac: float) -> float:
        return quantile(self.times, frac)

    @property
    def median(self) -> float:
        return self.q(0.5)

    @property
    def p90(self) -> float:
        return self.q(0.9)


@dataclass
class Row:
    name: str
    samples: Samples
    ref: Samples | None = None  # what the ratio is against
    ref_label: str = ""
    limit_ratio: float | None = None  # target: median <= limit_ratio * ref median
    limit_ms: float | None = None  # target: median <= limit_ms
    note: str = ""
    extra: bool = False  # the targets are the file store's; other rows' verdicts are for show

    @property
    def ratio(self) -> float | None:
        return self.samples.median / self.ref.median if self.ref else None

    def verdicts(self) -> list[bool]:
        out = []
        if self.limit_ratio is not None and self.ratio is not None:
            out.append(self.ratio <= self.limit_ratio)
        if self.limit_ms is not None:
            out.append(self.samples.median * 1e3 <= self.limit_ms)
        return out


def print_section(title: str, rows: list[Row]) -> None:
    head = (
        f"{'benchmark':<44} {'median ms':>10} {'p90 ms':>9} {'n':>4}  "
        f"{'ratio':<18} {'target':<26} result"
    )
    print(f"\n{title}")
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = f"{r.ratio:.2f}x {r.ref_label}" if r.ratio is not None else ""
        targets = []
        if r.limit_ratio is not None:
            targets.append(f"<= {r.limit_ratio:g}x {r.ref_label}")
        if r.limit_ms is not None:
            targets.append(f"<= {r.limit_ms:g} ms")
        verdicts = r.verdicts()
        result = "" if not verdicts else ("PASS" if all(verdicts) else "MISS")
        if len(verdicts) > 1 and not all(verdicts):
            missed = [t for t, v in zip(targets, verdicts, strict=True) if not v]
            result += f" ({', '.join(missed)})"
        if verdicts and r.extra:
            result = result.lower() + " (extra)"
        print(
            f"{r.name:<44} {fmt_ms(r.samples.median):>10} {fmt_ms(r.samples.p90):>9} "
            f"{len(r.samples.times):>4}  {ratio:<18} {', '.join(targets):<26} {result}"
        )
        if r.note:
            print(f"{'':<4}{r.note}")


# --------------------------------------------------------------------------- runner


@dataclass
class Contender:
    name: str
    run: Callable[[int], Awaitable[object]]  # timed
    before: Callable[[int], Awaitable[None]] | None = None  # untimed, before run
    after: Callable[[int], Awaitable[None]] | None = None  # untimed, after run
    samples: Samples = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.samples = Samples(self.name)


async def round_robin(contenders: list[Contender], iterations: int, warmup: int) -> None:
    """Run every contender once per iteration, rotating who goes first, so drift on a
    noisy machine (other tenants, writeback, thermal) hits all of them alike."""
    n = len(contenders)
    # Move everything alive now (setup data, and the ~150,000 objects the peer's SDK
    # imports) out of the collector's reach: otherwise every full collection, which the
    # timed operations' own allocations trigger, costs ~100 ms here and lands in p90.
    gc.collect()
    gc.freeze()
    for it in range(warmup + iterations):
        k = it % n
        for c in contenders[k:] + contenders[:k]:
            if c.before:
                await c.before(it)
            t0 = time.perf_counter()
            await c.run(it)
            t1 = time.perf_counter()
            if c.after:
                await c.after(it)
            if it >= warmup:
                c.samples.times.append(t1 - t0)
