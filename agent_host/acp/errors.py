"""The one place the ACP front end turns engine errors into JSON-RPC errors.

Codes are ours (:func:`agent_host.rpc.errors.error_code`), the same as the LSP
front end's. The SDK answers its own failures: params its schema rejects become
-32602 with pydantic's errors (each naming the field) in ``data``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from acp import RequestError
from pydantic import ValidationError

from ..rpc.errors import ErrorCode, error_code
from ..rpc.limits import REPORTED_PROBLEMS, clip

log = logging.getLogger(__name__)

CLIENT_FAILURES = (RequestError, ConnectionError, ValidationError, TimeoutError)
"""What a request to the client can end in besides its answer: an error response,
a hang-up, an answer the schema rejects, no answer in time."""

P = ParamSpec("P")
T = TypeVar("T")


def to_request_error(exc: Exception) -> RequestError:
    """The wire error for ``exc``; never a traceback, and internal errors logged."""
    if isinstance(exc, RequestError):
        return exc
    code = error_code(exc)
    if (
        code == ErrorCode.INTERNAL_ERROR
        and isinstance(exc, ValueError)
        and not isinstance(exc, ValidationError)  # a schema value we built wrong: ours
    ):
        # The service's argument checks ("cursor: ... is not a nextCursor") raise
        # ValueError naming the field: the caller's mistake, not ours.
        code = ErrorCode.INVALID_PARAMS
    if code == ErrorCode.INTERNAL_ERROR:
        log.error("internal error", exc_info=exc)
        return RequestError(
            int(code), f"internal error ({type(exc).__name__}); the agent's stderr has the details"
        )
    return RequestError(int(code), str(exc), {"error": type(exc).__name__})


def invalid_params(field: str, problem: str) -> RequestError:
    return RequestError(int(ErrorCode.INVALID_PARAMS), f"{field}: {problem}", {"field": field})


def answers(handler: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """``handler`` with every failure a JSON-RPC error of ours."""

    @functools.wraps(handler)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await handler(*args, **kwargs)
        except Exception as exc:
            raise to_request_error(exc) from None

    return wrapped


def ext_params(model: Any, params: dict[str, Any]) -> Any:
    """An extension method's params as ``model``; a RequestError naming the first
    bad field (the SDK validates only the methods it knows)."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "params"
        raise RequestError(
            int(ErrorCode.INVALID_PARAMS),
            f"{field}: {first['msg']}",
            {"errors": exc.errors(include_url=False, include_context=False)},
        ) from None


def bounded_error(error: dict[str, Any]) -> dict[str, Any]:
    """An error object as it is sent: short, whatever the params were.

    The SDK answers params its schema rejects with all of pydantic's errors in
    ``data``, each with the offending input -- a 3 MiB string echoed whole, a
    million errors for a million bad items. Kept: the first few, without inputs,
    the rest counted, and the message naming the first field.
    """
    message = str(error.get("message", ""))
    data = error.get("data")
    if isinstance(data, dict) and isinstance(data.get("errors"), list):
        problems = [e for e in data["errors"] if isinstance(e, dict)][: REPORTED_PROBLEMS + 1]
        total = len(data["errors"])
        kept = [{k: e[k] for k in ("type", "loc", "msg") if k in e} for e in problems]
        kept = kept[:REPORTED_PROBLEMS]
        data = {**data, "errors": kept}
        if total > len(kept):
            data["more"] = total - len(kept)
        if kept and ":" not in message:
            first = kept[0]
            field = ".".join(str(p) for p in first.get("loc", ())) or "params"
            more = f" (and {data['more']} more problems)" if "more" in data else ""
            message = f"{message}: {field}: {first.get('msg', '')}{more}"
    bounded = {**error, "message": clip(message)}
    if data is not None:
        bounded["data"] = data
    return bounded
