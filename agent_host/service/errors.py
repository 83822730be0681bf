"""What each engine error is, for every front end: one row per error type.

A front end turns an exception from the engine into a wire error in two steps:
:func:`describe` gives its :class:`ErrorKind`, the message to show and the data
to send, and the front end's own table gives the kind its code (the LSP dialect:
``server/protocol.py``; ACP: ``acp/errors.py``). A type with no row here (nor
an ancestor with one) is a bug reaching the caller: ``internal``, whatever it
derives from -- a ``ValueError`` too; the caller's mistakes are
:class:`~agent_host.session.errors.InvalidArgument` and the other typed rows.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from ..session import errors as e
from ..session.checkpoints import NothingToUndo
from ..session.environment import ShellEnvironmentError


class ErrorKind(enum.StrEnum):
    """A failure as a caller sees it, whatever the wire."""

    INVALID_PARAMS = "invalid_params"
    SESSION_NOT_FOUND = "session_not_found"
    CHECKPOINT_CONFLICT = "checkpoint_conflict"
    CHECKPOINT_NOT_FOUND = "checkpoint_not_found"
    NOTHING_TO_UNDO = "nothing_to_undo"
    UNDO_UNAVAILABLE = "undo_unavailable"
    SNAPSHOT_UNAVAILABLE = "snapshot_unavailable"
    STATE_INCOMPATIBLE = "state_incompatible"
    BLOB_NOT_FOUND = "blob_not_found"
    WORKSPACE_MISMATCH = "workspace_mismatch"
    WORKSPACE_REFUSED = "workspace_refused"
    """A workspace read or write failed for a reason the message gives: a path
    that changed while in use, a file too large, a directory where a file was."""
    OS_ERROR = "os_error"
    CAPABILITY_UNSUPPORTED = "capability_unsupported"
    TURN_IN_PROGRESS = "turn_in_progress"
    MODEL_ERROR = "model_error"
    PERMISSION_DENIED = "permission_denied"
    STORE_UNAVAILABLE = "store_unavailable"
    STORE_BUSY = "store_busy"
    CORRUPT_STORE = "corrupt_store"
    LEASE_LOST = "lease_lost"
    HOST_CLOSED = "host_closed"
    INTERNAL = "internal"
    """A bug: the message says only that, the log has the traceback."""


KINDS: dict[type[BaseException], ErrorKind] = {
    e.InvalidArgument: ErrorKind.INVALID_PARAMS,
    e.InvalidSessionId: ErrorKind.INVALID_PARAMS,
    e.UnsupportedStore: ErrorKind.INVALID_PARAMS,
    e.IncompleteStore: ErrorKind.INVALID_PARAMS,
    e.McpConfigError: ErrorKind.INVALID_PARAMS,
    e.SandboxConfigError: ErrorKind.INVALID_PARAMS,
    ShellEnvironmentError: ErrorKind.INVALID_PARAMS,
    e.PathOutsideWorkspace: ErrorKind.INVALID_PARAMS,
    e.SessionNotFound: ErrorKind.SESSION_NOT_FOUND,
    e.CheckpointConflictError: ErrorKind.CHECKPOINT_CONFLICT,
    e.CheckpointNotFound: ErrorKind.CHECKPOINT_NOT_FOUND,
    NothingToUndo: ErrorKind.NOTHING_TO_UNDO,
    e.UndoUnavailable: ErrorKind.UNDO_UNAVAILABLE,
    e.SnapshotUnavailable: ErrorKind.SNAPSHOT_UNAVAILABLE,
    e.StateIncompatible: ErrorKind.STATE_INCOMPATIBLE,
    e.BlobNotFound: ErrorKind.BLOB_NOT_FOUND,
    e.WorkspaceMismatch: ErrorKind.WORKSPACE_MISMATCH,
    e.ToolError: ErrorKind.WORKSPACE_REFUSED,
    e.FileChanged: ErrorKind.WORKSPACE_REFUSED,
    e.CapabilityUnsupported: ErrorKind.CAPABILITY_UNSUPPORTED,
    e.TurnInProgress: ErrorKind.TURN_IN_PROGRESS,
    e.ModelError: ErrorKind.MODEL_ERROR,
    e.PermissionDenied: ErrorKind.PERMISSION_DENIED,
    e.StoreUnavailable: ErrorKind.STORE_UNAVAILABLE,
    e.StoreBusy: ErrorKind.STORE_BUSY,
    e.CorruptLogError: ErrorKind.CORRUPT_STORE,
    e.BlobCorrupt: ErrorKind.CORRUPT_STORE,
    e.LeaseLost: ErrorKind.LEASE_LOST,
    e.HostClosed: ErrorKind.HOST_CLOSED,
    # Last in the MRO walk: the OS refused a workspace read or write (a full disk,
    # a read-only folder); the store's own OS errors arrive as StoreUnavailable.
    OSError: ErrorKind.OS_ERROR,
}
"""The nearest class in an error's MRO with a row decides its kind. AgentHostError
itself has none: a new error type must say what it is."""


@attrs.frozen
class ErrorReport:
    """An error as the front ends send it: the kind (each maps it to its code), the
    message, and ``data`` (``{"error": <type name>}``; None for an internal error,
    whose type says nothing to the caller)."""

    kind: ErrorKind
    message: str
    data: dict[str, Any] | None = None


def kind_of(error_type: type[BaseException]) -> ErrorKind | None:
    """The kind of ``error_type`` from the nearest row in its MRO; None: no row."""
    for cls in error_type.__mro__:
        kind = KINDS.get(cls)
        if kind is not None:
            return kind
    return None


def describe(exc: BaseException) -> ErrorReport:
    """``exc`` as a front end reports it; never a traceback. An internal error's
    message names only its type: the front end logs the traceback."""
    kind = kind_of(type(exc))
    if kind is None:
        return ErrorReport(ErrorKind.INTERNAL, f"internal error ({type(exc).__name__})")
    if kind is ErrorKind.OS_ERROR and isinstance(exc, OSError):
        message = e.describe_os_error(exc)
    else:
        message = str(exc)
    return ErrorReport(kind, message, {"error": type(exc).__name__})
