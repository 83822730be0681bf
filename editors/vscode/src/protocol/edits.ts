/**
 * LSP text edits on plain strings, and an in-memory editor that answers
 * `workspace/applyEdit` the way an editor does: apply the edit to its open
 * buffer, then tell the server with `textDocument/didChange`.
 *
 * The extension answers applyEdit itself (ui/agentEdits: VS Code's buffers, left
 * clean when they equal the disk) with `applyTextEdits`; the MemoryEditor is for
 * headless clients and for the tests, which play an editor against the real server.
 */

import type { Disposable, RpcEndpoint } from './api';

export interface Position {
    line: number;
    /** UTF-16 code units, LSP's default position encoding (and a JS string's unit). */
    character: number;
}
export interface Range {
    start: Position;
    end: Position;
}
export interface TextEdit {
    range: Range;
    newText: string;
}
export interface TextDocumentEdit {
    textDocument: { uri: string; version: number | null };
    edits: TextEdit[];
}
export interface WorkspaceEdit {
    changes?: Record<string, TextEdit[]>;
    documentChanges?: (TextDocumentEdit | { kind: string })[];
}
export interface ApplyWorkspaceEditParams {
    label?: string;
    edit: WorkspaceEdit;
}
export interface ApplyWorkspaceEditResult {
    applied: boolean;
    failureReason?: string;
}

const LINE_BREAK = /\r\n|\r|\n/g;

/** Offsets where each line starts. */
function lineStarts(text: string): number[] {
    const starts = [0];
    for (const match of text.matchAll(LINE_BREAK)) {
        starts.push((match.index ?? 0) + match[0].length);
    }
    return starts;
}

/** An LSP position as an offset into `text` (clamped to the line, as LSP says). */
export function offsetAt(text: string, position: Position, starts = lineStarts(text)): number {
    if (position.line >= starts.length) {
        return text.length;
    }
    const start = starts[Math.max(position.line, 0)];
    let end = position.line + 1 < starts.length ? starts[position.line + 1] : text.length;
    // the line's own text ends before its line break
    while (end > start && (text[end - 1] === '\n' || text[end - 1] === '\r')) {
        end--;
    }
    return Math.min(start + Math.max(position.character, 0), end);
}

/** `text` with `edits` applied (all ranges refer to the original text, as in LSP). */
export function applyTextEdits(text: string, edits: readonly TextEdit[]): string {
    const starts = lineStarts(text);
    const spans = edits
        .map((edit, index) => ({
            start: offsetAt(text, edit.range.start, starts),
            end: offsetAt(text, edit.range.end, starts),
            newText: edit.newText,
            index,
        }))
        .sort((a, b) => a.start - b.start || a.end - b.end || a.index - b.index);
    let out = '';
    let at = 0;
    for (const span of spans) {
        if (span.start < at) {
            throw new Error('overlapping text edits');
        }
        out += text.slice(at, span.start) + span.newText;
        at = Math.max(span.end, span.start);
    }
    return out + text.slice(at);
}

/** The range covering all of `text`. */
export function wholeRange(text: string): Range {
    const starts = lineStarts(text);
    const last = starts.length - 1;
    return { start: { line: 0, character: 0 }, end: { line: last, character: text.length - starts[last] } };
}

interface Buffer {
    uri: string;
    languageId: string;
    version: number;
    text: string;
}

/**
 * Open documents kept in memory, synced to the server with didOpen/didChange/
 * didClose, that answers `workspace/applyEdit`. Each applied edit is recorded in
 * `applied` (uri, label, text after), for tests and logs.
 */
export class MemoryEditor implements Disposable {
    private readonly buffers = new Map<string, Buffer>();
    readonly applied: { uri: string; label: string | undefined; text: string }[] = [];
    private readonly registration: Disposable;
    /** Answer every applyEdit with applied: false (an editor that refuses). */
    refuse = false;

    constructor(private readonly endpoint: RpcEndpoint) {
        this.registration = endpoint.onRequest('workspace/applyEdit', (params: ApplyWorkspaceEditParams) =>
            this.applyEdit(params),
        );
    }

    dispose(): void {
        this.registration.dispose();
    }

    open(uri: string, text: string, languageId = 'plaintext'): void {
        const buffer: Buffer = { uri, languageId, version: 1, text };
        this.buffers.set(uri, buffer);
        void this.endpoint.notify('textDocument/didOpen', {
            textDocument: { uri, languageId, version: buffer.version, text },
        });
    }

    /** The user types: the buffer becomes `text` (unsaved). */
    change(uri: string, text: string): void {
        const buffer = this.get(uri);
        buffer.text = text;
        buffer.version += 1;
        void this.endpoint.notify('textDocument/didChange', {
            textDocument: { uri, version: buffer.version },
            contentChanges: [{ text }],
        });
    }

    close(uri: string): void {
        this.get(uri);
        this.buffers.delete(uri);
        void this.endpoint.notify('textDocument/didClose', { textDocument: { uri } });
    }

    text(uri: string): string | undefined {
        return this.buffers.get(uri)?.text;
    }

    version(uri: string): number | undefined {
        return this.buffers.get(uri)?.version;
    }

    private get(uri: string): Buffer {
        const buffer = this.buffers.get(uri);
        if (buffer === undefined) {
            throw new Error(`${uri} is not open`);
        }
        return buffer;
    }

    /** What an editor does with `workspace/applyEdit`: all or nothing. */
    applyEdit(params: ApplyWorkspaceEditParams): ApplyWorkspaceEditResult {
        if (this.refuse) {
            return { applied: false, failureReason: 'refused by the test editor' };
        }
        const perUri = new Map<string, TextEdit[]>();
        for (const [uri, edits] of Object.entries(params.edit.changes ?? {})) {
            perUri.set(uri, [...(perUri.get(uri) ?? []), ...edits]);
        }
        for (const change of params.edit.documentChanges ?? []) {
            if (!('textDocument' in change)) {
                return { applied: false, failureReason: `resource operation ${change.kind} is not supported` };
            }
            const buffer = this.buffers.get(change.textDocument.uri);
            if (buffer && change.textDocument.version !== null && change.textDocument.version !== buffer.version) {
                return { applied: false, failureReason: `${buffer.uri} is at version ${buffer.version}` };
            }
            perUri.set(change.textDocument.uri, [...(perUri.get(change.textDocument.uri) ?? []), ...change.edits]);
        }
        const next = new Map<string, string>();
        for (const [uri, edits] of perUri) {
            const buffer = this.buffers.get(uri);
            if (buffer === undefined) {
                return { applied: false, failureReason: `${uri} is not open` };
            }
            try {
                next.set(uri, applyTextEdits(buffer.text, edits));
            } catch (err) {
                return { applied: false, failureReason: String(err) };
            }
        }
        for (const [uri, text] of next) {
            this.change(uri, text);
            this.applied.push({ uri, label: params.label, text });
        }
        return { applied: true };
    }
}
