"""Method names on the wire (JSON-RPC, LSP framing)."""

PROTOCOL_VERSION = 1

# client -> server requests
NEW = "session/new"
SEND = "session/send"
LIST = "session/list"
RESUME = "session/resume"
HISTORY = "session/history"
DELETE = "session/delete"
CHECKPOINTS = "session/checkpoints"
RESTORE = "session/restore"
UNDO_RESTORE = "session/undoRestore"
COMPACT = "session/compact"
FORK = "session/fork"
CLOSE = "session/close"

# client -> server notification
CANCEL = "session/cancel"

# server -> client
EVENT = "session/event"
REQUEST_PERMISSION = "session/requestPermission"

REQUESTS = (
    NEW,
    SEND,
    LIST,
    RESUME,
    HISTORY,
    DELETE,
    CHECKPOINTS,
    RESTORE,
    UNDO_RESTORE,
    COMPACT,
    FORK,
    CLOSE,
)
