"""Errors raised by the session engine.

Each error names what went wrong and what to do about it. Which kind of failure
each type is, for both front ends, is :mod:`agent_host.service.errors`: a new
error type needs a row there (tests/service/test_errors.py checks).
"""

from __future__ import annotations


class AgentHostError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidArgument(AgentHostError, ValueError):
    """The caller's input is not usable: the message names the argument (or the
    wire field) and says what is wrong. Raised where the input is checked; a plain
    ValueError from anywhere else is a bug, never the caller's mistake."""


class InvalidSessionId(AgentHostError, ValueError):
    """Not a session id: 1-512 characters, at most 1 KiB of UTF-8, no NUL, no
    unpaired surrogate (session/store/ids.py)."""


class SessionNotFound(AgentHostError, LookupError):
    """The session does not exist in the store."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r} not found; list sessions to see which exist"
            " (a session is stored from its first prompt: one made and never prompted"
            " is gone once the agent that made it exits)"
        )
        self.session_id = session_id


class CheckpointConflictError(AgentHostError):
    """Another writer appended to the session since the caller last read it.

    Raised instead of forking the session: reload the log and retry.
    """

    def __init__(self, session_id: str, expected_head: int, actual_head: int) -> None:
        super().__init__(
            f"session {session_id!r} moved on: expected head {expected_head}, "
            f"found {actual_head}; another writer appended to it. "
            "Reload the session and try again."
        )
        self.session_id = session_id
        self.expected_head = expected_head
        self.actual_head = actual_head


class CheckpointNotFound(AgentHostError, LookupError):
    """A seq that is not in the session's log."""


class CorruptLogError(AgentHostError):
    """A session log is damaged: a record that was written whole no longer reads.

    A torn tail (an append a crash cut short, its commit line missing) is repaired
    silently; anything else is never cut away, because it was acknowledged.
    """


class StoreBusy(AgentHostError):
    """The store stayed locked by another process past the timeout."""


class BlobNotFound(AgentHostError, LookupError):
    """No blob with that id is in the blob store."""


class BlobCorrupt(AgentHostError):
    """A stored blob whose bytes no longer hash to its id: the store was damaged."""


class SnapshotUnavailable(AgentHostError):
    """A restore or undo needs a file snapshot that is missing or damaged.

    Raised before anything is recorded or written: the session and its files are
    as they were. The message names the file and the blob.
    """


class UndoUnavailable(AgentHostError):
    """The events an undo would bring back are no longer in the store."""


class UndoWouldKeep(UndoUnavailable):
    """An undo asked to be whole (``partial=False``) found files changed since the
    restore wrote them: nothing was done. ``paths``: those files."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(
            f"not undone: {', '.join(paths)} changed since the rewind wrote them; "
            "undo with force to overwrite them"
        )
        self.paths = paths


class StoreUnavailable(AgentHostError):
    """The operating system refused the store a read or write (a full disk, a
    read-only folder, no permission). The message names the path and the reason;
    ``errno`` is the OS's code. Nothing half-done is left behind."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


def store_unavailable(path: object, action: str, exc: OSError) -> StoreUnavailable:
    """The typed error for an OSError the store met while doing ``action`` at ``path``."""
    return StoreUnavailable(f"cannot {action} {path}: {os_error_reason(exc)}", exc.errno)


def os_error_reason(exc: OSError) -> str:
    """Why the OS refused: its text for the errno ("No space left on device"), else
    the error's type (a TimeoutError raised without an errno)."""
    return exc.strerror or type(exc).__name__


def describe_os_error(exc: OSError) -> str:
    """What the OS refused, and where: "No space left on device: /w/a.py"."""
    reason = os_error_reason(exc)
    return f"{reason}: {exc.filename}" if exc.filename else reason


class UnsupportedStore(AgentHostError, ValueError):
    """A store URL whose scheme no backend understands."""


class IncompleteStore(InvalidArgument):
    """A store object without some of the six methods every store needs (append,
    read, head, list, delete, truncate). ``missing`` names them; the message says
    what each must do."""

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


class ModelError(AgentHostError):
    """The model provider failed: bad credentials, unknown model, outage, timeout.

    The message says what to fix and never contains a credential.
    """


class TurnInProgress(AgentHostError):
    """A turn is already running in this session; one turn at a time."""


class LeaseLost(AgentHostError):
    """The turn lease was lost while held: its database connection died and the
    lease was taken by another host, or could not be taken back. Nothing more is
    written under it and the operation stopped; the next turn in the session closes
    what this one left open."""


class HostClosed(AgentHostError):
    """The host was closed: its model connections and store are released. Open a
    new one (or resume the session from its State) to go on."""


class StateIncompatible(AgentHostError, ValueError):
    """Bytes given as a session State that this version cannot resume from: not a
    State at all, a State of another harness, or one of a newer format."""


class CapabilityUnsupported(AgentHostError):
    """The host was configured without what this call needs (e.g. ``sessions=False``)."""


class PathOutsideWorkspace(AgentHostError, ValueError):
    """A path that resolves outside the workspace roots (symlinks followed)."""


class WorkspaceMismatch(AgentHostError):
    """A session's files belong to a folder other than this host's workspace."""


class ToolError(AgentHostError):
    """A tool could not do what was asked; the message goes back to the model."""


class FileTooLarge(ToolError):
    """A file larger than the caller reads whole (``limit`` bytes): nothing was read."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size:,} bytes, more than the {limit:,} read at once")
        self.path = path
        self.size = size
        self.limit = limit


class WriteRefused(ToolError):
    """The editor a write goes through refused it or failed (an error answer, a
    hang-up, no answer in time): nothing was written by us. ``reason`` is the
    editor's own words, for the model and the user."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"the editor did not write {path}: {reason}")
        self.path = path
        self.reason = reason


class FileChanged(AgentHostError):
    """A conditional write found the file other than it expected: nothing was
    written. ``found`` is the blob id of what is there (None: no file)."""

    def __init__(self, path: str, found: str | None) -> None:
        super().__init__(f"{path} changed: its content is not what the write expected")
        self.path = path
        self.found = found


class PathChanged(ToolError):
    """A path changed (a folder swapped for a symlink) while it was being used:
    nothing was done through it, and trying again re-checks it."""


class SandboxUnavailable(ToolError):
    """Commands are to run confined (``read-only`` or ``workspace-write``) and no
    mechanism can confine them here (bubblewrap missing, no user namespaces): they
    are refused, never run unconfined, unless the policy's ``fallback`` is
    ``full``. The message names the reason and the way to choose."""


class SandboxConfigError(AgentHostError, ValueError):
    """A sandbox policy that cannot be used: the message names the field."""


class PermissionDenied(AgentHostError):
    """The user (or the approval policy) refused a tool call."""


class McpConfigError(AgentHostError, ValueError):
    """An MCP server configuration that cannot be used: the message names the field
    (``mcpServers[1].args[0] must be a string``) or the file, never a secret value."""
