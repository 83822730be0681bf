/** How the UI tells a user-dismissed step from a failure, and words an error. */

import { AgentError } from '../protocol/api';

/** Thrown when the user backs out of a step (no session picked): shown as nothing. */
export class Cancelled extends Error {}

export function errorText(err: unknown): string {
    if (err instanceof AgentError) {
        return err.message;
    }
    if (err instanceof Error) {
        return err.message;
    }
    return String(err);
}
