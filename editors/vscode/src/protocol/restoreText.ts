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
 * A checkpoint as users count them: `3 · add a test`. The server's `label` where
 * it gives one; else its ordinal (1 = the first prompt; the wire's `ordinal`, else
 * `position` in the session's list, else `#seq`) and the prompt's first line.
 */
export function checkpointLabel(c: Pick<CheckpointInfo, 'seq' | 'prompt' | 'ordinal' | 'label'>, position?: number): string {
    if (c.label) {
        return c.label;
    }
    const ordinal = c.ordinal ?? position ?? `#${c.seq}`;
    return `${ordinal} · ${c.prompt.split('\n')[0].slice(0, 60)}`;
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

/** `1 file: a.py`, `2 files: a.py, b.py`, `no files`. */
export function filesText(paths: readonly string[]): string {
    return paths.length ? `${countText(paths.length, 'file')}: ${listPaths(paths)}` : 'no files';
}

/** What a restore did to the conversation: `4 messages removed`, or kept when it
 * restored files only. */
export function conversationText(conversation: boolean | undefined, messagesRemoved: number | undefined): string {
    return conversation === false ? 'the conversation kept' : `${countText(messagesRemoved ?? 0, 'message')} removed`;
}

/** What an undo put back: `1 file and 4 messages back`. */
export function undoneText(result: { restoredFiles: readonly string[]; messagesRestored?: number }): string {
    return `${countText(result.restoredFiles.length, 'file')} and ${countText(result.messagesRestored ?? 0, 'message')} back`;
}
