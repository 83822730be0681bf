"""The part of streaming every network provider shares: turning failures into
ModelErrors, retrying a response that broke before anything was delivered, the
bounds on a call's time, and parsing tool-call arguments.

The SDKs retry a *request* that fails (429, 5xx, refused connections) themselves;
what they cannot retry is a response that breaks after it started, which is safe to
retry only while none of its events has reached the caller, and a request that
stalls: a response that does not begin within the *first-byte* bound is retried
here, and the user told (``on_wait``) while it waits and before each retry.

Every call is bounded twice. The SDK's own timeout is per read, so a server that
sends a keep-alive every 20 s (an SSE comment, Anthropic's ``ping``) would hold a
call for ever: the *idle* bound (:class:`StallClock`) counts only what the model
says -- from the request to the first token, then between tokens -- and the
*total* bound caps one call, retries included, however busily it streams.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import attrs
import orjson

from ..errors import ModelError
from ..model import (
    RAW_ARGUMENTS_KEY,  # noqa: E402 (re-exported)
    ModelEvent,
    ModelWait,
)
from .errors import Endpoint, ModelTimeout, is_transient, translate
from .limits import (
    FIRST_BYTE,
    IDLE,
    RETRY_INITIAL_DELAY,
    TOTAL,
    WAIT_NOTICE_AFTER,
    WAIT_NOTICE_EVERY,
    backoff,
    seconds,
)

"""A tool call whose arguments were not a JSON object arrives as
``{RAW_ARGUMENTS_KEY: "<the text the model wrote>"}``, so the engine can answer
it with a tool error the model can correct, instead of the turn dying."""

MODEL_TIMEOUT = IDLE.default
"""The idle bound's default: seconds a model call may go without a token."""
MODEL_TOTAL_TIMEOUT = TOTAL.default
"""The total bound's default: seconds one model call may take, retries included."""
T = TypeVar("T")
OnWait = Callable[[ModelWait], Awaitable[None]]


class StreamInterrupted(Exception):
    """Raised by a provider's attempt when its response broke after the request
    succeeded; ``cause`` None means it just ended before the model finished."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__("the response stream was interrupted")
        self.cause = cause


def guarded(
    attempt: Callable[[], AsyncGenerator[ModelEvent, None]],
    endpoint: Endpoint,
    *,
    initial_delay: float = RETRY_INITIAL_DELAY,
    on_wait: OnWait | None = None,
) -> AsyncIterator[ModelEvent]:
    """Run ``attempt()`` and pass its events on; every failure leaves as ModelError.

    A :class:`StreamInterrupted` or a response that did not begin within the
    first-byte bound, before the first event is delivered, is retried (up to
    ``endpoint.max_retries``, exponential backoff with jitter); after it, a broken
    stream becomes :class:`~.errors.ModelStreamBroken`. ``on_wait`` hears, while
    the first event is awaited, that the call still waits, and before each retry
    that it will retry.
    """
    return _Guard(attempt, endpoint, initial_delay, on_wait).run()


@attrs.define
class _Guard:
    attempt: Callable[[], AsyncGenerator[ModelEvent, None]]
    endpoint: Endpoint
    initial_delay: float
    on_wait: OnWait | None
    retries: int = 0
    started: float = 0.0

    async def run(self) -> AsyncIterator[ModelEvent]:
        endpoint = self.endpoint
        loop = asyncio.get_running_loop()
        self.started = loop.time()
        deadline = self.started + endpoint.total_timeout
        while True:
            delivered = False
            events = self.attempt()
            try:
                while True:
                    failure: ModelError | None = None
                    retry, why = False, ""
                    bound = asyncio.timeout_at(deadline)
                    try:
                        async with bound:
                            event = await (anext(events) if delivered else self._first(events))
                    except StopAsyncIteration:
                        return
                    except StreamInterrupted as exc:
                        if not delivered and self._may_retry() and is_transient(exc.cause):
                            retry, why = True, "broke"
                        else:
                            failure = translate(
                                exc.cause,
                                endpoint,
                                midstream=True,
                                delivered=delivered,
                                retries=self.retries,
                            )
                    except Exception as exc:
                        if bound.expired():
                            failure = self._total()
                        elif isinstance(exc, ModelTimeout) and exc.bound == "first_byte":
                            retry, why = self._may_retry(), "stalled"
                            failure = None if retry else self._no_answer(loop.time())
                        else:
                            failure = translate(exc, endpoint, delivered=delivered)
                    # Raised here, outside the except blocks, so the ModelError carries
                    # no __context__: the SDK's exception holds the request and its headers.
                    if failure is not None:
                        raise failure from None
                    if retry:
                        break
                    delivered = True
                    yield event
            finally:
                await events.aclose()
            self.retries += 1
            delay = backoff(self.retries, self.initial_delay)
            if loop.time() + delay >= deadline:
                raise self._total() from None
            await self._tell(loop.time(), retry_in=delay, why=why)
            await asyncio.sleep(delay)

    def _may_retry(self) -> bool:
        return self.retries < self.endpoint.max_retries

    async def _first(self, events: AsyncGenerator[ModelEvent, None]) -> ModelEvent:
        """The attempt's first event; meanwhile the user hears every so often that
        the call still waits."""
        if self.on_wait is None:
            return await anext(events)
        ticker = asyncio.create_task(self._tick())
        try:
            return await anext(events)
        finally:
            ticker.cancel()

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        # A notice that would race this attempt's end (and its retry notice) is
        # left out.
        end = began + self.endpoint.limits.first_byte_bound
        margin = min(1.0, 0.1 * self.endpoint.limits.first_byte_bound)
        await asyncio.sleep(WAIT_NOTICE_AFTER)
        while True:
            if abs(loop.time() - end) >= margin:
                await self._tell(loop.time())
            await asyncio.sleep(WAIT_NOTICE_EVERY)

    async def _tell(
        self, now: float, *, retry_in: float | None = None, why: str = "stalled"
    ) -> None:
        if self.on_wait is None:
            return
        endpoint = self.endpoint
        name = f"{endpoint.provider}/{endpoint.model}"
        attempts = endpoint.max_retries + 1
        if retry_in is None:
            waited = now - self.started
            attempt = self.retries + 1
            shown = round(waited) if waited >= 1 else waited  # "5 s", not "5.1 s"
            message = f"no answer from {name} yet ({seconds(shown)} s)"
            if attempt > 1:
                message += f"; attempt {attempt} of {attempts}"
        else:
            waited = endpoint.limits.first_byte_bound
            what = (
                f"no answer from {name} in {seconds(waited)} s"
                if why == "stalled"
                else f"the response from {name} broke off before any output"
            )
            retry = f"retry {self.retries} of {endpoint.max_retries}"
            message = f"{what}; {retry} in {seconds(retry_in)} s"
            attempt = self.retries
        wait = ModelWait(name, waited, attempt, attempts, retry_in, message)
        # Shielded: a ticker cancelled as the answer arrives does not cut a message
        # half sent to the client.
        await asyncio.shield(self.on_wait(wait))

    def _no_answer(self, now: float) -> ModelTimeout:
        endpoint = self.endpoint
        bound = endpoint.limits.first_byte_bound
        tries = self.retries + 1
        times = "" if tries == 1 else f", {tries} times ({seconds(now - self.started)} s in all)"
        return ModelTimeout(
            f"{endpoint.provider}/{endpoint.model}: no answer from {endpoint.base_url} within "
            f"{seconds(bound)} s{times} (model first-byte timeout; {FIRST_BYTE.hint})",
            bound="first_byte",
        )

    def _total(self) -> ModelTimeout:
        endpoint = self.endpoint
        return ModelTimeout(
            f"{endpoint.provider}/{endpoint.model}: the model call took longer than "
            f"{endpoint.total_timeout:g} s in all (model total timeout; {TOTAL.hint})",
            bound="total",
        )


class StallClock:
    """The bounds of one attempt at a model call: first byte (the request, until
    the response begins) and idle (the time since the request went out, then since
    the last meaningful event of its stream). Raises a :class:`ModelTimeout` that
    says which ran out."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.answering = False
        self._last = time.monotonic()

    def progress(self) -> None:
        """The model said something: the clock starts again."""
        self.answering = True
        self._last = time.monotonic()

    async def request(self, work: Awaitable[T]) -> T:
        """``work``, the request, within the first-byte bound: a response that does
        not begin in time is a ModelTimeout the guard retries."""
        limits = self.endpoint.limits
        if limits.first_byte_timeout >= limits.timeout:
            return await self.bounded(work)  # the idle bound is the nearer
        bound = asyncio.timeout(self._last + limits.first_byte_timeout - time.monotonic())
        try:
            async with bound:
                return await work
        except Exception:
            if bound.expired():
                raise ModelTimeout("no first byte", bound="first_byte") from None
            raise

    async def bounded(self, work: Awaitable[T]) -> T:
        """``work`` (a read of the stream) within what is left of the idle bound."""
        bound = asyncio.timeout(self._last + self.endpoint.timeout - time.monotonic())
        try:
            async with bound:
                return await work
        except Exception:
            if bound.expired():
                raise self._stalled() from None
            raise

    def _stalled(self) -> ModelTimeout:
        endpoint = self.endpoint
        what = "nothing more" if self.answering else "nothing"
        return ModelTimeout(
            f"{endpoint.provider}/{endpoint.model}: the model sent {what} for "
            f"{endpoint.timeout:g} s (model idle timeout; {IDLE.hint})",
            bound="idle",
        )


def parse_arguments(raw: str) -> dict[str, Any]:
    """A tool call's arguments from the JSON text the model streamed."""
    if not raw.strip():
        return {}  # models send "" for tools without parameters
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested past Python's limit
        return {RAW_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) when the server reports none."""
    return len(text) // 4


def estimate_input_tokens(messages: list[dict[str, Any]]) -> int:
    # orjson: the stdlib's encoder took 200 ms on the loop for a 30 MB conversation
    return len(orjson.dumps(messages, default=str)) // 4
