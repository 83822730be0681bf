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
from ..jsonrpc.messages import INVALID_REQUEST, PARSE_ERROR, invalid_message, is_id
from ..rpc import methods
from ..rpc.errors import ErrorCode
from ..service.errors import ErrorKind, describe
from ..session.providers.registry import EXAMPLE_MODELS
from ..session.redaction import SECRETS
from .stdio import REFUSED_KEY

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

    client_gone = False
    """stdout failed (EPIPE): nobody reads the answers any more."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        return data

    def handle_message(self, message: Any) -> None:
        if self.client_gone:
            return  # what was read before the client left is not worked on
        if isinstance(message, dict) and message.get("method") == types.INITIALIZE:
            _register_store_password(message.get("params"))
        if isinstance(message, dict) and isinstance(message.get(REFUSED_KEY), dict):
            refused = message[REFUSED_KEY]
            self.send_error(None, refused.get("code", PARSE_ERROR), str(refused.get("message")))
            return
        problem = invalid_message(message)
        if problem is not None:
            log.warning("invalid message %.200r: %s", message, problem)
            msg_id = message.get("id") if isinstance(message, dict) else None
            self.send_error(msg_id if is_id(msg_id) else None, INVALID_REQUEST, problem)
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
        if self.client_gone:
            return
        if SECRETS and not _is_request(data):
            data = self._masked(data)
        try:
            super()._send_data(data)
        except BrokenPipeError:
            self._hang_up()

    def _hang_up(self) -> None:
        """The client closed its end of stdout: the requests it sent are cancelled
        rather than each worked on and failing to answer (a flood of them kept the
        server busy long after the client left); stdin's end then closes the host
        (``AgentServer.close_on_hang_up``)."""
        log.warning("the client is gone (stdout: broken pipe): cancelling its requests")
        self.client_gone = True
        for future in list(self._request_futures.values()):
            future.cancel()

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
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "agentHost": {
                "protocolVersion": methods.PROTOCOL_VERSION,
                "version": __version__,
                **methods.advertised(),
                # the provider table's examples: what an editor's model picker offers
                "models": list(EXAMPLE_MODELS),
            }
        }
        return result


def _register_store_password(params: Any) -> None:
    """The store URL's password masked in every log line from now on: pygls logs
    the whole initialize params (``initialization_options=...``) before our
    handler opens the store, where the store would have registered it."""
    if isinstance(params, dict) and isinstance(params.get("initializationOptions"), dict):
        SECRETS.add_url(params["initializationOptions"].get("store"))


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, dict | list | str | int | float)


def _is_request(data: Any) -> bool:
    """A request (method and id) of ours to the client, as a dict or a pygls message."""
    if isinstance(data, dict):
        return "method" in data and "id" in data
    return getattr(data, "method", None) is not None and getattr(data, "id", None) is not None


CODES: dict[ErrorKind, ErrorCode] = {
    ErrorKind.INVALID_PARAMS: ErrorCode.INVALID_PARAMS,
    ErrorKind.SESSION_NOT_FOUND: ErrorCode.SESSION_NOT_FOUND,
    ErrorKind.CHECKPOINT_CONFLICT: ErrorCode.CHECKPOINT_CONFLICT,
    ErrorKind.CHECKPOINT_NOT_FOUND: ErrorCode.CHECKPOINT_NOT_FOUND,
    ErrorKind.NOTHING_TO_UNDO: ErrorCode.INCOMPATIBLE_STATE,
    ErrorKind.UNDO_UNAVAILABLE: ErrorCode.INCOMPATIBLE_STATE,
    ErrorKind.SNAPSHOT_UNAVAILABLE: ErrorCode.SNAPSHOT_UNAVAILABLE,
    ErrorKind.STATE_INCOMPATIBLE: ErrorCode.INCOMPATIBLE_STATE,
    ErrorKind.BLOB_NOT_FOUND: ErrorCode.INCOMPATIBLE_STATE,
    ErrorKind.WORKSPACE_MISMATCH: ErrorCode.INCOMPATIBLE_STATE,
    ErrorKind.WORKSPACE_REFUSED: ErrorCode.IO_ERROR,
    ErrorKind.OS_ERROR: ErrorCode.IO_ERROR,
    ErrorKind.CAPABILITY_UNSUPPORTED: ErrorCode.UNSUPPORTED_CAPABILITY,
    ErrorKind.TURN_IN_PROGRESS: ErrorCode.TURN_IN_PROGRESS,
    ErrorKind.MODEL_ERROR: ErrorCode.MODEL_ERROR,
    ErrorKind.PERMISSION_DENIED: ErrorCode.PERMISSION_DENIED,
    ErrorKind.STORE_UNAVAILABLE: ErrorCode.STORE_UNAVAILABLE,
    ErrorKind.STORE_BUSY: ErrorCode.STORE_UNAVAILABLE,
    ErrorKind.CORRUPT_STORE: ErrorCode.STORE_UNAVAILABLE,
    ErrorKind.LEASE_LOST: ErrorCode.LEASE_LOST,
    ErrorKind.HOST_CLOSED: ErrorCode.HOST_CLOSED,
    ErrorKind.INTERNAL: ErrorCode.INTERNAL_ERROR,
}
"""The LSP dialect's code for each kind of error (docs/protocol.md lists them)."""


def error_code(exc: BaseException) -> ErrorCode:
    """The wire code for ``exc``."""
    return CODES[describe(exc).kind]


def to_wire(exc: Exception) -> JsonRpcException:
    """The JSON-RPC error for an exception from a handler; never a traceback, and
    an internal error logged with its traceback."""
    if isinstance(exc, JsonRpcException):
        return exc
    report = describe(exc)
    code = int(CODES[report.kind])
    if report.kind is ErrorKind.INTERNAL:
        log.error("internal error", exc_info=exc)
        return JsonRpcException(f"{report.message}; the server log has the details", code=code)
    return JsonRpcException(report.message, code=code, data=report.data)
