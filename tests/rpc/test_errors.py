from agent_host.rpc.errors import ErrorCode, error_code
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
