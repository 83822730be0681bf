"""The one place the ACP front end turns engine errors into JSON-RPC errors.

The kind of each engine error is the service's (:mod:`agent_host.service.errors`);
its code is :data:`CODES`: ACP's own where ACP has one, ours outside ACP's range
for the rest. The SDK answers its own failures: params its schema rejects become
-32602 with pydantic's errors (each naming the field) in ``data``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from acp import RequestError
from pydantic import ValidationError

from ..jsonrpc.limits import REPORTED_PROBLEMS, clip
from ..service.errors import ErrorKind, ErrorReport, describe

log = logging.getLogger(__name__)

CLIENT_FAILURES = (RequestError, ConnectionError, ValidationError, TimeoutError)
"""What a request to the client can end in besides its answer: an error response,
a hang-up, an answer the schema rejects, no answer in time."""

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
"""ACP's own "Resource not found": what its SDKs read as an unknown session (the
TypeScript SDK's idempotent close resolves on it)."""
MODEL_ERROR = -31007

CODES: dict[ErrorKind, int] = {
    ErrorKind.INVALID_PARAMS: INVALID_PARAMS,
    ErrorKind.SESSION_NOT_FOUND: RESOURCE_NOT_FOUND,
    ErrorKind.CHECKPOINT_CONFLICT: -31002,
    ErrorKind.CHECKPOINT_NOT_FOUND: -31003,
    ErrorKind.NOTHING_TO_UNDO: -31004,
    ErrorKind.UNDO_UNAVAILABLE: -31004,
    ErrorKind.SNAPSHOT_UNAVAILABLE: -31010,
    ErrorKind.STATE_INCOMPATIBLE: -31004,
    ErrorKind.BLOB_NOT_FOUND: -31004,
    ErrorKind.WORKSPACE_MISMATCH: -31004,
    ErrorKind.WORKSPACE_REFUSED: -31011,
    ErrorKind.OS_ERROR: -31011,
    ErrorKind.CAPABILITY_UNSUPPORTED: -31005,
    ErrorKind.TURN_IN_PROGRESS: -31006,
    ErrorKind.MODEL_ERROR: MODEL_ERROR,
    ErrorKind.PERMISSION_DENIED: -31008,
    ErrorKind.STORE_UNAVAILABLE: -31009,
    ErrorKind.STORE_BUSY: -31009,
    ErrorKind.CORRUPT_STORE: -31009,
    ErrorKind.LEASE_LOST: -31013,
    ErrorKind.HOST_CLOSED: -31012,
    ErrorKind.INTERNAL: INTERNAL_ERROR,
}
"""ACP's code for each kind of error (docs/acp.md has the table). ACP's own where
it has one: JSON-RPC's, and -32002 "Resource not found" for an unknown session.
ACP claims the whole server-error range (-32000..-32099) for its own codes -- it
has added to it since v1 -- so ours are outside it, in the range JSON-RPC leaves
to applications: the LSP dialect's number plus 1000 (its -32007 model error is
-31007 here), the kinds grouped under one code as there. ``data.kind`` names the
error's type either way; ``data.error`` repeats the message, because clients show it
in place of ``message`` when present (CodeCompanion.nvim shows ``data.error`` alone)."""

P = ParamSpec("P")
T = TypeVar("T")


def to_request_error(exc: Exception) -> RequestError:
    """The wire error for ``exc``; never a traceback, and internal errors logged
    with theirs. A pydantic ValidationError here is a schema value we built wrong:
    internal, as is any ValueError the engine did not raise as InvalidArgument."""
    if isinstance(exc, RequestError):
        return exc
    report = describe(exc)
    if report.kind is ErrorKind.INTERNAL:
        log.error("internal error", exc_info=exc)
        return RequestError(INTERNAL_ERROR, f"{report.message}; the agent's stderr has the details")
    return RequestError(CODES[report.kind], report.message, _data(report))


def _data(report: ErrorReport) -> dict[str, Any] | None:
    """The error's ``data`` on ACP: the type as ``kind``, and as ``error`` the message
    a client may show instead of ``message`` (the convention CodeCompanion reads)."""
    if report.data is None or "error" not in report.data:
        return report.data
    data = {k: v for k, v in report.data.items() if k != "error"}
    return {**data, "kind": report.data["error"], "error": report.message}


def invalid_params(field: str, problem: str) -> RequestError:
    return RequestError(INVALID_PARAMS, f"{field}: {problem}", {"field": field})


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
            INVALID_PARAMS,
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
