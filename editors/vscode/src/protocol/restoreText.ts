/**
 * What a checkpoint and a restore's outcome say to the user: the checkpoint
 * picker's detail line, the conflicts warning and the not-captured note. Plain
 * text, no `vscode` import, so the unit tests check it without an editor.
 */

import type { CheckpointInfo } from './types';

/** At most this many paths are named in a message; the rest are counted. */
export const MAX_NAMED = 10;

/** `a, b, c`, or `a, b, … and 7 more` past `max`. */
export function listPaths(paths: readonly string[], max = MAX_NAMED): string {
    if (paths.length <= max) {
        return paths.join(', ');
    }
    return `${paths.slice(0, max).join(', ')}, … and ${paths.length - max} more`;
}

/**
 * A checkpoint as users count them: its ordinal (1 = the first prompt; the wire's
 * `ordinal` where the server gives it, else the position in the session's list)
 * and the prompt's first line: `3 · add a test`.
 */
export function checkpointLabel(c: CheckpointInfo, position: number): string {
    const ordinal = (c as CheckpointInfo & { ordinal?: number }).ordinal ?? position;
    return `${ordinal} · ${c.prompt.split('\n')[0].slice(0, 80)}`;
}

/** `1 message`, `4 messages`: a count in the words users use. */
export function countText(n: number, noun: string, plural = `${noun}s`): string {
    return `${n} ${n === 1 ? noun : plural}`;
}

/** The checkpoint picker's detail: the files the turn changed, those a command
 * changed apart, then what commands changed that a restore cannot put back, the
 * MCP tools called, and what ran outside the sandbox (only then can something
 * outside the workspace have changed, which no restore undoes). */
export function checkpointDetail(c: CheckpointInfo): string {
    const byCommands = new Set(c.fromCommands ?? []);
    const byTools = c.files.filter((f) => !byCommands.has(f));
    const byCommand = c.files.filter((f) => byCommands.has(f));
    const parts: string[] = [];
    if (byTools.length) {
        parts.push(`changed: ${listPaths(byTools)}`);
    }
    if (byCommand.length) {
        parts.push(`${byTools.length ? 'by commands' : 'changed by commands'}: ${listPaths(byCommand)}`);
    }
    if (!parts.length) {
        parts.push('no files changed');
    }
    const notCaptured = c.notCaptured ?? [];
    if (notCaptured.length) {
        parts.push(`not captured (a restore leaves them): ${listPaths(notCaptured)}`);
    }
    const external = c.externalTools ?? [];
    if (external.length) {
        parts.push(`used MCP tools: ${listPaths(external)}`);
    }
    // A server from before the sandbox sends no `unconfined`: every MCP tool may have.
    const unconfined = c.unconfined ?? external;
    if (unconfined.length) {
        parts.push(`ran without the sandbox (what it did outside the workspace stays): ${listPaths(unconfined)}`);
    }
    return parts.join(' · ');
}

/** The warning of a restore (or, with `since` 'the restore wrote', an undo) that
 * left files as they are. */
export function conflictsText(paths: readonly string[], since = 'the agent last wrote'): string {
    return paths.length === 1
        ? `1 file changed since ${since} it and was left as it is: ${paths[0]}`
        : `${paths.length} files changed since ${since} them and were left as they are: ${listPaths(paths)}`;
}

/** The note of a restore that could not put back what commands changed. */
export function notCapturedText(paths: readonly string[]): string {
    return paths.length === 1
        ? `1 path changed through commands but was not captured (ignored, or over the size cap), so it was not restored: ${paths[0]}`
        : `${paths.length} paths changed through commands but were not captured (ignored, or over the size cap), so they were not restored: ${listPaths(paths)}`;
}

/** The warning of a restore past commands or MCP tools that ran without the
 * sandbox: what they changed outside the workspace stays ('' when none did). */
export function outsideChangesText(unconfined: readonly string[]): string {
    if (!unconfined.length) {
        return '';
    }
    return `ran without the sandbox: ${listPaths(unconfined.map((u) => u.split('\n')[0].slice(0, 60)))}; what they changed outside the workspace was not undone`;
}
