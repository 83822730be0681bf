"""The LSP dialect's JSON-RPC error codes. Which engine error gets which code is
``server/protocol.py``'s table, from the service's error kinds."""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    INVALID_PARAMS = -32602
    METHOD_NOT_FOUND = -32601
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    # Custom codes, in the range JSON-RPC leaves to servers.
    SESSION_NOT_FOUND = -32001
    CHECKPOINT_CONFLICT = -32002
    CHECKPOINT_NOT_FOUND = -32003
    INCOMPATIBLE_STATE = -32004
    UNSUPPORTED_CAPABILITY = -32005
    TURN_IN_PROGRESS = -32006
    MODEL_ERROR = -32007
    PERMISSION_DENIED = -32008
    STORE_UNAVAILABLE = -32009
    SNAPSHOT_UNAVAILABLE = -32010
    IO_ERROR = -32011
    HOST_CLOSED = -32012
    LEASE_LOST = -32013
