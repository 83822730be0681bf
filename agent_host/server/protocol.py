"""How the server extends pygls: params kept as plain JSON, capabilities advertised,
and engine errors turned into JSON-RPC errors -- in one place."""

from __future__ import annotations

import json
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
from ..session.redaction import SECRETS
from .stdio import INVALID_REQUEST, PARSE_ERROR, REFUSED_KEY

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
    """pygls's protocol, answering every request as JSON-RPC 2.0 asks, and
    advertising the agent.

    pygls structures messages in ``json.loads``'s object hook, which runs on every
    nested object too: params holding an object with a "jsonrpc" key were taken
    for a message, and a request whose params failed to structure was dropped
    unanswered. Here the hook leaves objects as parsed, and the whole message is
    checked and structured once in ``handle_message``, where a failure can still
    be answered: -32700 for a frame the reader refused (stdio.py), -32600 for a
    message that is no request, notification or response, and -32600 for requests
    after ``shutdown``. A request without params has ``params: null``.
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        return data

    def handle_message(self, message: Any) -> None:
        if isinstance(message, dict) and isinstance(message.get(REFUSED_KEY), dict):
            refused = message[REFUSED_KEY]
            self.send_error(None, refused.get("code", PARSE_ERROR), str(refused.get("message")))
            return
        problem = invalid_message(message)
        if problem is not None:
            log.warning("invalid message %.200r: %s", message, problem)
            msg_id = message.get("id") if isinstance(message, dict) else None
            self.send_error(msg_id if _is_id(msg_id) else None, INVALID_REQUEST, problem)
            return
        if "method" in message:
            if self._shutdown and "id" in message and message["method"] != types.EXIT:
                self.send_error(
                    message["id"], INVALID_REQUEST, "the server is shut down: send exit"
                )
                return
            message.setdefault("params", None)  # omitted params are params: null
        try:
            structured = super().structure_message(message)
        except Exception as exc:
            self._refuse(message, exc)
            return
        super().handle_message(structured)

    def _refuse(self, message: dict[str, Any], exc: Exception) -> None:
        log.warning("unusable message %.200r: %s", message, exc)
        if "id" not in message or "method" not in message:
            return  # a notification or a response: nobody waits for an answer
        method = message["method"]
        self.send_error(
            message["id"], int(ErrorCode.INVALID_PARAMS), f"invalid params for {method!r}"
        )

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """An error response; ``msg_id`` None when the request's id is unknown.

        Built here rather than through pygls's ``_send_response``, whose message
        types cannot carry the null id JSON-RPC asks for then.
        """
        self._send_data(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        )

    def _send_data(self, data: Any) -> None:
        """Every response and notification with the process's secrets masked
        (redaction.py). Requests to the client are sent as they are: a
        ``workspace/applyEdit`` carries file text that must reach the file whole."""
        if SECRETS and not _is_request(data):
            data = self._masked(data)
        super()._send_data(data)

    def _masked(self, data: Any) -> Any:
        if isinstance(data, dict):
            return SECRETS.mask_json(data)
        payload = {f: getattr(data, f, None) for f in ("params", "result", "error")}
        if attrs.has(type(data)) and all(_plain(v) for v in payload.values()):
            # Our methods' params and results are plain JSON: masked in place, not
            # serialised and parsed again (a 30 MB tool call took 250 ms more).
            present = {f: SECRETS.mask_json(v) for f, v in payload.items() if v is not None}
            return attrs.evolve(data, **present)
        # lsprotocol's typed results and errors: through their JSON
        return SECRETS.mask_json(json.loads(json.dumps(data, default=self._serialize_message)))

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


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, dict | list | str | int | float)


def _is_request(data: Any) -> bool:
    """A request (method and id) of ours to the client, as a dict or a pygls message."""
    if isinstance(data, dict):
        return "method" in data and "id" in data
    return getattr(data, "method", None) is not None and getattr(data, "id", None) is not None


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def invalid_message(message: Any) -> str | None:
    """Why ``message`` is no JSON-RPC 2.0 request, notification or response, if not."""
    if isinstance(message, list):
        return "batches are not supported: send one message per frame"
    if not isinstance(message, dict):
        return "a message is a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'a message has "jsonrpc": "2.0"'
    if "id" in message and not _is_id(message["id"]):
        return "an id is a string or an integer"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "the method is a string"
        return None
    if "id" not in message:
        return "a message has a method, or is a response with an id"
    if ("result" in message) == ("error" in message):
        return "a response has either a result or an error"
    return None


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
