/** Method names and error codes on the wire (agent_host/rpc/methods.py, errors.py). */

// client -> server requests
export const NEW = 'session/new';
export const SEND = 'session/send';
export const LIST = 'session/list';
export const RESUME = 'session/resume';
export const HISTORY = 'session/history';
export const DELETE = 'session/delete';
export const CHECKPOINTS = 'session/checkpoints';
export const RESTORE = 'session/restore';
export const UNDO_RESTORE = 'session/undoRestore';
export const COMPACT = 'session/compact';
export const FORK = 'session/fork';
export const CLOSE = 'session/close';

// client -> server notification
export const CANCEL = 'session/cancel';

// server -> client
export const EVENT = 'session/event';
export const REQUEST_PERMISSION = 'session/requestPermission';

export const REQUESTS = [NEW, SEND, LIST, RESUME, HISTORY, DELETE, CHECKPOINTS, RESTORE, UNDO_RESTORE, COMPACT, FORK, CLOSE] as const;

export const ErrorCode = {
    INVALID_PARAMS: -32602,
    METHOD_NOT_FOUND: -32601,
    INTERNAL_ERROR: -32603,
    REQUEST_CANCELLED: -32800,
    SESSION_NOT_FOUND: -32001,
    CHECKPOINT_CONFLICT: -32002,
    CHECKPOINT_NOT_FOUND: -32003,
    INCOMPATIBLE_STATE: -32004,
    UNSUPPORTED_CAPABILITY: -32005,
    TURN_IN_PROGRESS: -32006,
    MODEL_ERROR: -32007,
    PERMISSION_DENIED: -32008,
    STORE_UNAVAILABLE: -32009,
    SNAPSHOT_UNAVAILABLE: -32010,
    IO_ERROR: -32011,
    HOST_CLOSED: -32012,
    LEASE_LOST: -32013,
} as const;

export type ErrorCodeName = keyof typeof ErrorCode;

/** The name of a wire error code (`TURN_IN_PROGRESS`), or undefined. */
export function errorName(code: number): ErrorCodeName | undefined {
    for (const [name, value] of Object.entries(ErrorCode)) {
        if (value === code) {
            return name as ErrorCodeName;
        }
    }
    return undefined;
}
