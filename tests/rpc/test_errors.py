from agent_host.rpc.errors import ErrorCode
from agent_host.server.protocol import error_code
from agent_host.session import errors


def test_engine_errors_map_to_their_codes():
    assert error_code(errors.CheckpointConflictError("s", 1, 2)) == ErrorCode.CHECKPOINT_CONFLICT
    assert error_code(errors.SessionNotFound("s")) == ErrorCode.SESSION_NOT_FOUND
    assert error_code(errors.InvalidSessionId("bad")) == ErrorCode.INVALID_PARAMS
    assert error_code(errors.StoreBusy("busy")) == ErrorCode.STORE_UNAVAILABLE


def test_anything_else_is_an_internal_error():
    assert error_code(RuntimeError("boom")) == ErrorCode.INTERNAL_ERROR
    assert error_code(errors.AgentHostError("unmapped")) == ErrorCode.INTERNAL_ERROR


def test_custom_codes_are_outside_the_reserved_range():
    custom = [
        c
        for c in ErrorCode
        if c.name
        not in {"INVALID_PARAMS", "METHOD_NOT_FOUND", "INTERNAL_ERROR", "REQUEST_CANCELLED"}
    ]
    assert all(-32099 <= c <= -32000 for c in custom)
    assert len({int(c) for c in ErrorCode}) == len(ErrorCode)


def test_restore_and_os_errors_reach_the_wire_with_their_reason():
    import errno

    from agent_host.server.protocol import to_wire

    unavailable = errors.store_unavailable(
        "/s/sessions/a.jsonl", "append to", OSError(errno.EROFS, "Read-only file system")
    )
    wire = to_wire(unavailable)
    assert wire.code == ErrorCode.STORE_UNAVAILABLE
    assert wire.message == "cannot append to /s/sessions/a.jsonl: Read-only file system"
    assert unavailable.errno == errno.EROFS
    wire = to_wire(OSError(errno.ENOSPC, "No space left on device", "/w/a.py"))
    assert wire.code == ErrorCode.IO_ERROR
    assert wire.message == "No space left on device: /w/a.py"
    assert to_wire(errors.SnapshotUnavailable("a.py")).code == ErrorCode.SNAPSHOT_UNAVAILABLE
    assert to_wire(errors.UndoUnavailable("gone")).code == ErrorCode.INCOMPATIBLE_STATE
    assert to_wire(errors.BlobCorrupt("bad")).code == ErrorCode.STORE_UNAVAILABLE
