"""How the server extends pygls: params kept as plain JSON, capabilities advertised,
and engine errors turned into JSON-RPC errors -- in one place."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from .. import __version__
from ..rpc import methods
from ..rpc.errors import ErrorCode, error_code

log = logging.getLogger(__name__)


def plain_params_converter():
    """pygls's converter, but custom methods get their params as plain JSON.

    pygls turns unknown params into namedtuples, and answers nothing at all when
    typed params fail to structure in its reader; we validate in each handler
    instead, so every request gets an answer naming the bad field.
    """
    converter = default_converter()

    def keep(obj: dict[str, Any], cls: type) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


class AgentProtocol(LanguageServerProtocol):
    """Adds ``capabilities.experimental.agentHost`` to the initialize result."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "agentHost": {
                "protocolVersion": methods.PROTOCOL_VERSION,
                "version": __version__,
                "methods": [*methods.REQUESTS, methods.CANCEL],
                "notifications": [methods.EVENT],
                "clientRequests": [methods.REQUEST_PERMISSION],
            }
        }
        return result


def to_wire(exc: Exception) -> JsonRpcException:
    """The JSON-RPC error for an exception from a handler; never a traceback."""
    if isinstance(exc, JsonRpcException):
        return exc
    code = error_code(exc)
    if code == ErrorCode.INTERNAL_ERROR and isinstance(exc, ValueError):
        code = ErrorCode.INVALID_PARAMS
    if code == ErrorCode.INTERNAL_ERROR:
        log.error("internal error", exc_info=exc)
        return JsonRpcException(
            f"internal error ({type(exc).__name__}); the server log has the details",
            code=int(code),
        )
    return JsonRpcException(str(exc), code=int(code), data={"error": type(exc).__name__})
