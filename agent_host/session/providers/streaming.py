"""The part of streaming every network provider shares: turning failures into
ModelErrors, retrying a response that broke before anything was delivered, the
bounds on a call's time, and parsing tool-call arguments.

The SDKs retry the *request* (429, 5xx, connection errors, timeouts) themselves;
what they cannot retry is a response that breaks after it started. That is safe to
retry only while none of its events has reached the caller.

Every call is bounded twice. The SDK's own timeout is per read, so a server that
sends a keep-alive every 20 s (an SSE comment, Anthropic's ``ping``) would hold a
call for ever: the *idle* bound (:class:`StallClock`) counts only what the model
says -- from the request to the first token, then between tokens -- and the
*total* bound caps one call, retries included, however busily it streams.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import orjson

from ..errors import ModelError
from ..model import (
    RAW_ARGUMENTS_KEY,  # noqa: E402 (re-exported)
    ModelEvent,
)
from .errors import Endpoint, ModelTimeout, is_transient, translate

"""A tool call whose arguments were not a JSON object arrives as
``{RAW_ARGUMENTS_KEY: "<the text the model wrote>"}``, so the engine can answer
it with a tool error the model can correct, instead of the turn dying."""

MAX_RETRY_DELAY = 8.0
MODEL_TIMEOUT = 120.0
"""The idle bound's default: seconds a model call may go without a token."""
MODEL_TOTAL_TIMEOUT = 1200.0
"""The total bound's default: seconds one model call may take, retries included."""
TIMEOUT_HINT = "--model-timeout, modelTimeout or model_timeout to change"
TOTAL_TIMEOUT_HINT = "--model-total-timeout, modelTotalTimeout or model_total_timeout to change"
T = TypeVar("T")


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
    initial_delay: float = 0.5,
) -> AsyncIterator[ModelEvent]:
    """Run ``attempt()`` and pass its events on; every failure leaves as ModelError.

    A :class:`StreamInterrupted` before the first event is delivered is retried
    (up to ``endpoint.max_retries``, exponential backoff with jitter); after it,
    it becomes :class:`~.errors.ModelStreamBroken`.
    """
    return _guarded(attempt, endpoint, initial_delay)


async def _guarded(
    attempt: Callable[[], AsyncGenerator[ModelEvent, None]],
    endpoint: Endpoint,
    initial_delay: float,
) -> AsyncIterator[ModelEvent]:
    retries = 0
    loop = asyncio.get_running_loop()
    total = endpoint.total_timeout
    deadline = None if total is None else loop.time() + total
    while True:
        delivered = False
        events = attempt()
        try:
            while True:
                failure: ModelError | None = None
                retry = False
                bound = asyncio.timeout_at(deadline)
                try:
                    async with bound:
                        event = await anext(events)
                except StopAsyncIteration:
                    return
                except StreamInterrupted as exc:
                    if not delivered and retries < endpoint.max_retries and is_transient(exc.cause):
                        retry = True
                    else:
                        failure = translate(
                            exc.cause,
                            endpoint,
                            midstream=True,
                            delivered=delivered,
                            retries=retries,
                        )
                except Exception as exc:
                    if bound.expired():
                        failure = ModelTimeout(
                            f"{endpoint.provider}/{endpoint.model}: the model call took longer "
                            f"than {total:g} s in all (model total timeout; {TOTAL_TIMEOUT_HINT})",
                            bound="total",
                        )
                    else:
                        failure = translate(exc, endpoint, delivered=delivered)
                # Raised here, outside the except blocks, so the ModelError carries no
                # __context__: the SDK's exception holds the request and its headers.
                if failure is not None:
                    raise failure from None
                if retry:
                    break
                delivered = True
                yield event
        finally:
            await events.aclose()
        retries += 1
        await asyncio.sleep(backoff(retries, initial_delay))


class StallClock:
    """The idle bound of one attempt at a model call: the time since the request
    went out, then since the last meaningful event of its stream. Raises a
    :class:`ModelTimeout` that says so when it runs out."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.answering = False
        self._last = time.monotonic()

    def progress(self) -> None:
        """The model said something: the clock starts again."""
        self.answering = True
        self._last = time.monotonic()

    async def bounded(self, work: Awaitable[T]) -> T:
        """``work`` (the request, or a read of its stream) within what is left."""
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
            f"{endpoint.timeout:g} s (model idle timeout; {TIMEOUT_HINT})",
            bound="idle",
        )


def backoff(retry: int, initial_delay: float) -> float:
    """Seconds to wait before retry number ``retry`` (1-based): doubling, capped, with
    up to 25% jitter so many clients don't retry in lockstep."""
    delay = min(initial_delay * 2 ** (retry - 1), MAX_RETRY_DELAY)
    return delay * (1 - 0.25 * random.random())


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
