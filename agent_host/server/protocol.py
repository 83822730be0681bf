"""How the server extends pygls: params kept as plain JSON, capabilities advertised,
and engine errors turned into JSON-RPC errors -- in one place."""

from __future__ import annotations

import logging
from typing import Any

import attrs
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
        # Members JSON-RPC does not define are ignored, not a reason to drop the message.
        return cls(**{f.name: obj[f.name] for f in attrs.fields(cls) if f.name in obj})

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


class AgentProtocol(LanguageServerProtocol):
    """pygls's protocol, answering every request, and advertising the agent.

    pygls structures messages in ``json.loads``'s object hook, which runs on every
    nested object too: params holding an object with a "jsonrpc" key were taken
    for a message, and a request whose params failed to structure was dropped
    unanswered. Here the hook leaves objects as parsed, and the whole message is
    structured once in ``handle_message``, where a failure can still be answered.
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        return data

    def handle_message(self, message: Any) -> None:
        if isinstance(message, dict):
            try:
                message = super().structure_message(message)
            except Exception as exc:
                self._refuse(message, exc)
                return
        if not hasattr(message, "jsonrpc"):
            log.warning("ignored a message that is not a JSON-RPC object: %.200r", message)
            return
        super().handle_message(message)

    def _refuse(self, message: dict[str, Any], exc: Exception) -> None:
        msg_id = message.get("id")
        log.warning("unusable message %.200r: %s", message, exc)
        if msg_id is None or "method" not in message or not isinstance(msg_id, (int, str)):
            return  # a notification or a response: nobody waits for an answer
        code = ErrorCode.INVALID_PARAMS if "params" in message else ErrorCode.INTERNAL_ERROR
        error = types.ResponseError(
            code=int(code), message=f"invalid params for {message.get('method')!r}"
        )
        self._send_response(msg_id, error=error)

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
    if code == ErrorCode.IO_ERROR and isinstance(exc, OSError):
        return JsonRpcException(
            os_error_message(exc), code=int(code), data={"error": type(exc).__name__}
        )
    return JsonRpcException(str(exc), code=int(code), data={"error": type(exc).__name__})


def os_error_message(exc: OSError) -> str:
    """What the OS refused, and where: "No space left on device: /w/a.py"."""
    reason = exc.strerror or type(exc).__name__
    return f"{reason}: {exc.filename}" if exc.filename else reason
