/** Method names and error codes on the wire: generated from agent_host/rpc into
 * wire.generated.ts (the method table in methods.py, the codes in errors.py). */

import { ErrorCode } from './wire.generated';

// Everything generated (names, REQUESTS, ErrorCode, and the params and result
// types), so a new method needs no edit here.
export * from './wire.generated';

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
