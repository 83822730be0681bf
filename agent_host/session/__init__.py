"""The session engine: event logs, stores, blobs. Knows nothing of LSP."""

from .blobs import BlobStore, FileBlobStore, GcResult, MemoryBlobStore, blob_id
from .errors import (
    AgentHostError,
    BlobNotFound,
    CheckpointConflictError,
    CheckpointNotFound,
    CorruptLogError,
    InvalidSessionId,
    SessionNotFound,
    StoreBusy,
    UnsupportedStore,
)
from .store import (  # SqliteCheckpointer: see __getattr__
    Checkpointer,
    FileCheckpointer,
    MemoryCheckpointer,
    SessionInfo,
    Truncation,
    collect_garbage,
    default_store_url,
    open_store,
)

__all__ = [
    "AgentHostError",
    "BlobNotFound",
    "BlobStore",
    "CheckpointConflictError",
    "CheckpointNotFound",
    "Checkpointer",
    "CorruptLogError",
    "FileBlobStore",
    "FileCheckpointer",
    "GcResult",
    "InvalidSessionId",
    "MemoryBlobStore",
    "MemoryCheckpointer",
    "SessionInfo",
    "SessionNotFound",
    "SqliteCheckpointer",
    "StoreBusy",
    "Truncation",
    "UnsupportedStore",
    "blob_id",
    "collect_garbage",
    "default_store_url",
    "open_store",
]


def __getattr__(name: str) -> object:
    if name == "SqliteCheckpointer":  # loaded on first use, like the store's
        from .store.sqlite import SqliteCheckpointer

        return SqliteCheckpointer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
