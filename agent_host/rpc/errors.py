"""JSON-RPC error codes, and the one place engine errors are mapped to them."""

from __future__ import annotations

from enum import IntEnum

from ..session import errors as session_errors
from ..session.checkpoints import NothingToUndo
from .converter import InvalidParams


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


_CODES: dict[type[Exception], ErrorCode] = {
    session_errors.InvalidSessionId: ErrorCode.INVALID_PARAMS,
    session_errors.SessionNotFound: ErrorCode.SESSION_NOT_FOUND,
    session_errors.CheckpointConflictError: ErrorCode.CHECKPOINT_CONFLICT,
    session_errors.CheckpointNotFound: ErrorCode.CHECKPOINT_NOT_FOUND,
    session_errors.CorruptLogError: ErrorCode.STORE_UNAVAILABLE,
    session_errors.StoreBusy: ErrorCode.STORE_UNAVAILABLE,
    session_errors.BlobNotFound: ErrorCode.INCOMPATIBLE_STATE,
    session_errors.BlobCorrupt: ErrorCode.STORE_UNAVAILABLE,
    session_errors.SnapshotUnavailable: ErrorCode.SNAPSHOT_UNAVAILABLE,
    session_errors.UndoUnavailable: ErrorCode.INCOMPATIBLE_STATE,
    session_errors.StoreUnavailable: ErrorCode.STORE_UNAVAILABLE,
    session_errors.UnsupportedStore: ErrorCode.INVALID_PARAMS,
    session_errors.McpConfigError: ErrorCode.INVALID_PARAMS,
    session_errors.TurnInProgress: ErrorCode.TURN_IN_PROGRESS,
    session_errors.LeaseLost: ErrorCode.LEASE_LOST,
    session_errors.ModelError: ErrorCode.MODEL_ERROR,
    session_errors.CapabilityUnsupported: ErrorCode.UNSUPPORTED_CAPABILITY,
    session_errors.HostClosed: ErrorCode.HOST_CLOSED,
    session_errors.StateIncompatible: ErrorCode.INCOMPATIBLE_STATE,
    session_errors.PermissionDenied: ErrorCode.PERMISSION_DENIED,
    session_errors.PathOutsideWorkspace: ErrorCode.INVALID_PARAMS,
    session_errors.WorkspaceMismatch: ErrorCode.INCOMPATIBLE_STATE,
    NothingToUndo: ErrorCode.INCOMPATIBLE_STATE,
    InvalidParams: ErrorCode.INVALID_PARAMS,
    # Last in the MRO walk: the OS refused a workspace read or write (a full disk,
    # a read-only folder); the store's own OS errors arrive as StoreUnavailable.
    OSError: ErrorCode.IO_ERROR,
}


def error_code(exc: BaseException) -> ErrorCode:
    """The wire code for ``exc``: the nearest mapped class in its MRO, else internal."""
    for cls in type(exc).__mro__:
        code = _CODES.get(cls)
        if code is not None:
            return code
    return ErrorCode.INTERNAL_ERROR
