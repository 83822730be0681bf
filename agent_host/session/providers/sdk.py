"""What the providers built on a vendor SDK (``openai``, ``anthropic``) share: importing
the SDK only when such a provider is opened, so ``import agent_host`` works without it;
opening its client, explicitly or from the SDK's own environment variables; and
turning one attempt at a call into a retried, guarded stream."""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import attrs

from ..model import ModelEvent, ModelRequest
from .errors import Endpoint, ModelConfigError, ModelTimeout
from .limits import RETRY_INITIAL_DELAY, Limits
from .streaming import StallClock, StreamInterrupted, guarded

SDK_TIMEOUT_MARGIN = 5.0
"""The SDK's own (per read) timeout is our longest bound plus this: a backstop, so
that our bounds, which name themselves, are what runs out."""


def sdk_timeout(limits: Limits) -> float:
    return max(limits.first_byte_timeout, limits.timeout) + SDK_TIMEOUT_MARGIN


def import_sdk(module: str, install: str) -> Any:
    failure = None
    try:
        return importlib.import_module(module)
    except ImportError:
        failure = ModelConfigError(f"the {module!r} package is not installed: {install}")
    raise failure from None


def open_client(
    provider: str,
    name: str,
    client_class: Callable[..., Any],
    *,
    refusals: tuple[type[BaseException], ...],
    refused: Callable[[BaseException], str],
    key_hint: str,
    api_key: str | None,
    base_url: str | None,
    limits: Limits,
) -> tuple[Any, Endpoint]:
    """The SDK's client and the endpoint it calls. ``None`` for ``api_key`` or
    ``base_url`` lets the SDK read its own environment variables; when it finds no
    usable credentials it raises one of ``refusals``, which becomes a
    ModelConfigError saying ``refused(exc)``."""
    failure = None
    try:
        client = client_class(
            api_key=api_key,
            base_url=base_url,
            timeout=sdk_timeout(limits),
            # The SDK retries failed requests (429, 5xx, refused connections) quickly;
            # a request that stalls is ours to retry (streaming.guarded), and to report.
            max_retries=limits.retries,
        )
    except refusals as exc:
        failure = ModelConfigError(refused(exc))
    # Raised outside the except block so the error carries no __context__ (the SDK's
    # exception), as in streaming.guarded.
    if failure is not None:
        raise failure from None
    url = str(client.base_url).rstrip("/")
    # anthropic's client may hold a bearer token besides (or instead of) a key
    keys = (client.api_key, getattr(client, "auth_token", None), api_key)
    secrets = tuple(k for k in keys if isinstance(k, str) and k)
    endpoint = Endpoint(provider, name, url, key_hint, limits, secrets=secrets)
    return client, endpoint


@attrs.define(eq=False)
class SdkProvider:
    """A ModelProvider whose subclass says how one attempt at a call streams."""

    model: str
    """The full name, e.g. ``openai/gpt-4.1-mini``."""
    endpoint: Endpoint
    client: Any = attrs.field(repr=False)
    """The SDK's async client, configured with the key, base URL, timeout and retries."""
    retry_initial_delay: float = RETRY_INITIAL_DELAY

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return guarded(
            lambda: self._attempt(request),
            self.endpoint,
            initial_delay=self.retry_initial_delay,
            on_wait=request.on_wait,
        )

    async def close(self) -> None:
        await self.client.close()

    def _attempt(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        raise NotImplementedError


async def interruptible(
    stream: Any, clock: StallClock, meaningful: Callable[[Any], bool] = lambda _: True
) -> AsyncIterator[Any]:
    """The SDK stream's items, each within the idle bound (an item that is not
    ``meaningful``, a keep-alive, does not restart its clock); a failure while
    reading them is a StreamInterrupted, which the guard may retry, unlike a
    failure of the request itself."""
    iterator = stream.__aiter__()
    while True:
        try:
            item = await clock.bounded(anext(iterator))
        except StopAsyncIteration:
            return
        except ModelTimeout:
            raise
        except Exception as exc:
            raise StreamInterrupted(exc) from exc
        if meaningful(item):
            clock.progress()
        yield item
