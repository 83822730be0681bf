/**
 * A session's conversation as chat entries, folded from `session/event`
 * notifications (live) or from `session/history` messages (a resumed session).
 * The chat view renders these; no `vscode` import here.
 */

import type { ChatMessage, CheckpointInfo, SendResult, SessionEvent } from './types';

export type Entry =
    | { role: 'user'; text: string; context?: ContextChip[]; seq?: number }
    | { role: 'assistant'; text: string; streaming: boolean; seq?: number }
    | {
          role: 'tool';
          callId: string;
          name: string;
          arguments: Record<string, unknown>;
          output?: string;
          isError?: boolean;
          seq?: number;
      }
    | FileEntry
    /** After a turn that changed files: the chat's Review Changes for it. */
    | { role: 'review'; turn: number; files: number }
    | { role: 'info'; text: string; level: 'info' | 'warning' | 'error' };

/** A file a turn changed ("modified: greet.py"), once per file and turn. `turn` is
 * the seq of the prompt that started it (its checkpoint); `status` what the user
 * chose for it after the turn (Keep, Undo). */
export interface FileEntry {
    role: 'file';
    path: string;
    change: 'created' | 'modified' | 'deleted';
    seq?: number;
    turn?: number;
    status?: 'kept' | 'undone';
}

/** What the user attached to a prompt, as the chat shows it (a chip, not the text). */
export interface ContextChip {
    uri?: string;
    /** The file's name and the lines attached: `greet.py (2 lines)`. */
    label: string;
}

function chip(uri: unknown, text: unknown): ContextChip {
    const body = typeof text === 'string' ? text : '';
    const lines = body ? body.split('\n').length : 0;
    const at = typeof uri === 'string' && uri ? uri : undefined;
    const name = at ? decodeURIComponent(at.replace(/[?#].*$/, '').split('/').pop() || at) : 'selection';
    return { ...(at ? { uri: at } : {}), label: `${name} (${lines} line${lines === 1 ? '' : 's'})` };
}

/** A logged prompt's context (`user_prompt`'s `context`), as chips. */
function chipsOf(context: unknown): ContextChip[] | undefined {
    if (!Array.isArray(context) || !context.length) {
        return undefined;
    }
    return context.map((c: { uri?: unknown; text?: unknown }) => chip(c?.uri, c?.text));
}

const CONTEXT_BLOCK = /\n\n<context uri=(['"])(.*?)\1>\n([\s\S]*?)\n<\/context>$/;

/**
 * A prompt as session/history gives it (the model's view: the prompt, then each
 * context block the server appended) split back into the prompt and its chips.
 */
export function splitContext(content: string): { text: string; context?: ContextChip[] } {
    const chips: ContextChip[] = [];
    let text = content;
    for (let m = CONTEXT_BLOCK.exec(text); m; m = CONTEXT_BLOCK.exec(text)) {
        chips.unshift(chip(m[2], m[3]));
        text = text.slice(0, m.index);
    }
    return chips.length ? { text, context: chips } : { text };
}

export interface TranscriptState {
    sessionId: string;
    entries: Entry[];
    /** A turn is running (a user_prompt came, its turn_end not yet). */
    running: boolean;
    inputTokens: number;
    outputTokens: number;
    /** USD, from usage events (and totalCost of send results, which wins); null
     * when a model call's cost is unknown (the server has no price for its model). */
    cost: number | null;
    /** Whether `cost` covers the whole session (false after a resume: the server
     * does not report past cost until the next turn ends). */
    costKnown: boolean;
}

/** How session/history shows a compaction's summary (agent_host/session/conversation.py). */
export const SUMMARY_PREFIX = 'Summary of the conversation so far:';

/**
 * Whether a tool result, as session/history gives it (content only, no error
 * flag), was an error result: the server's texts for a refused call, a cancelled
 * or interrupted one, arguments that were not JSON, an unknown tool, a tool's
 * own failure (`NAME: what went wrong`) and a command that failed (its status line).
 * See agent_host/session/turn.py, conversation.py and tools/dispatch.py.
 */
export function isErrorResult(name: string, output: string): boolean {
    if (
        output.startsWith('Permission denied:') ||
        output.startsWith('[cancelled by the user') ||
        output.startsWith('[tool call interrupted') ||
        output.startsWith(`The arguments of your ${name} call were not valid JSON`) ||
        output.startsWith('Unknown tool ') ||
        (name !== '' && output.startsWith(`${name}: `))
    ) {
        return true;
    }
    if (name === 'run_command') {
        const status = /\n\n\[(exit code (-?\d+|None)|timed out after [^\]]*|killed by signal \d+)\]$/.exec(output);
        return status !== null && status[1] !== 'exit code 0';
    }
    return false;
}

export class Transcript {
    readonly state: TranscriptState;
    /** The seq of the running (or last) turn's prompt. */
    private turn: number | undefined;

    constructor(sessionId: string) {
        this.state = {
            sessionId,
            entries: [],
            running: false,
            inputTokens: 0,
            outputTokens: 0,
            cost: 0,
            costKnown: true,
        };
    }

    get entries(): Entry[] {
        return this.state.entries;
    }

    private last(): Entry | undefined {
        return this.state.entries[this.state.entries.length - 1];
    }

    private streaming(): Extract<Entry, { role: 'assistant' }> | undefined {
        const last = this.last();
        return last && last.role === 'assistant' && last.streaming ? last : undefined;
    }

    info(text: string, level: 'info' | 'warning' | 'error' = 'info'): void {
        this.state.entries.push({ role: 'info', text, level });
    }

    /** The line of the latest compaction: one per compaction, updated as it goes. */
    private compaction: Extract<Entry, { role: 'info' }> | undefined;

    /** Says how a compaction stands on its one line: `fresh` (it started) adds the
     * line, later stages (and the request's outcome) change it. */
    compactionLine(text: string, level: 'info' | 'warning' = 'info', fresh = false): void {
        if (!fresh && this.compaction && this.state.entries.includes(this.compaction)) {
            this.compaction.text = text;
            this.compaction.level = level;
        } else {
            this.compaction = { role: 'info', text, level };
            this.state.entries.push(this.compaction);
        }
    }

    /** Folds one event in; returns false for events of another session or unknown kinds. */
    apply(event: SessionEvent): boolean {
        if (event.sessionId !== this.state.sessionId) {
            return false;
        }
        const entries = this.state.entries;
        const data = event.data as Record<string, unknown>;
        const seq = typeof data.seq === 'number' ? data.seq : undefined;
        switch (event.kind) {
            case 'user_prompt':
                this.state.running = true;
                this.turn = seq;
                entries.push({ role: 'user', text: String(data.text ?? ''), ...withChips(chipsOf(data.context)), seq });
                return true;
            case 'text_delta': {
                const open = this.streaming();
                if (open) {
                    open.text += String(data.text ?? '');
                } else {
                    entries.push({ role: 'assistant', text: String(data.text ?? ''), streaming: true });
                }
                return true;
            }
            case 'assistant_message': {
                const text = String(data.text ?? '');
                const open = this.streaming();
                if (open) {
                    open.text = text; // the logged text is the whole of it
                    open.streaming = false;
                    open.seq = seq;
                } else if (text) {
                    entries.push({ role: 'assistant', text, streaming: false, seq });
                }
                return true;
            }
            case 'tool_call':
                this.closeStreaming();
                entries.push({
                    role: 'tool',
                    callId: String(data.callId ?? ''),
                    name: String(data.name ?? ''),
                    arguments: (data.arguments as Record<string, unknown>) ?? {},
                    seq,
                });
                return true;
            case 'tool_result': {
                const callId = String(data.callId ?? '');
                const call = [...entries]
                    .reverse()
                    .find((e): e is Extract<Entry, { role: 'tool' }> => e.role === 'tool' && e.callId === callId);
                if (call) {
                    call.output = String(data.output ?? '');
                    call.isError = Boolean(data.isError);
                } else {
                    entries.push({
                        role: 'tool',
                        callId,
                        name: '?',
                        arguments: {},
                        output: String(data.output ?? ''),
                        isError: Boolean(data.isError),
                        seq,
                    });
                }
                return true;
            }
            case 'file_snapshot': {
                if (data.jump) {
                    return false; // a restore's or undo's change, not the turn's: the restore reports it
                }
                const before = data.before ?? null;
                const after = data.after ?? null;
                const change = before === null ? 'created' : after === null ? 'deleted' : 'modified';
                const path = String(data.path ?? '');
                const same = this.turn === undefined ? undefined : this.fileEntry(this.turn, path);
                if (same) {
                    // written again in the same turn: one line, saying what the turn did to it
                    same.change = same.change === 'created' && change !== 'deleted' ? 'created' : change;
                    same.seq = seq;
                } else {
                    entries.push({ role: 'file', path, change, seq, ...(this.turn === undefined ? {} : { turn: this.turn }) });
                }
                return true;
            }
            case 'usage':
                this.state.inputTokens += Number(data.inputTokens ?? 0);
                this.state.outputTokens += Number(data.outputTokens ?? 0);
                // One unknown part makes the sum unknown: a partial sum would pass for the whole.
                this.state.cost =
                    this.state.cost === null || data.cost == null ? null : this.state.cost + Number(data.cost);
                return true;
            case 'turn_end': {
                this.closeStreaming();
                this.state.running = false;
                this.addReview(this.turn);
                const reason = String(data.stopReason ?? '');
                if (reason === 'cancelled') {
                    this.info('Turn cancelled.', 'warning');
                } else if (reason && reason !== 'end_turn') {
                    this.info(`Turn ended: ${reason}.`, reason === 'error' ? 'error' : 'warning');
                }
                return true;
            }
            case 'compaction_progress': {
                // one line per compaction: started and summarising say "Compacting…",
                // done and skipped end it (the server's message in words, no seqs)
                const stage = String(data.stage ?? '');
                const message = String(data.message ?? '').replace(/ -> /g, ' → ');
                if (stage === 'done') {
                    this.compactionLine(`Compacted the conversation${message ? `: ${message}` : ''}.`);
                } else if (stage === 'skipped') {
                    this.compactionLine(`Nothing to compact yet${message ? `: ${message}` : ''}.`);
                } else {
                    this.compactionLine('Compacting the conversation…', 'info', stage === 'started');
                }
                return true;
            }
            case 'model_wait':
                // "no answer from openai/gpt-4.1 in 15 s; retry 1 of 2 in 0.5 s"
                this.info(String(data.message ?? 'waiting for the model'), 'warning');
                return true;
            case 'mcp_server': {
                const state = String(data.state ?? '');
                if (state === 'failed' || state === 'restarted') {
                    this.info(String(data.message ?? `MCP server ${String(data.server)} ${state}`), 'warning');
                }
                return true;
            }
            default:
                return false;
        }
    }

    /** The file line of `path` in turn `turn`, if any. */
    fileEntry(turn: number, path: string): FileEntry | undefined {
        return this.state.entries.find((e): e is FileEntry => e.role === 'file' && e.turn === turn && e.path === path);
    }

    /** The user kept (or undid) the turn's change to `path`: its line says so. */
    markFile(turn: number, path: string, status: 'kept' | 'undone'): void {
        const entry = this.fileEntry(turn, path);
        if (entry) {
            entry.status = status;
        }
    }

    /** Review Changes after a turn's file lines, when it changed files. */
    private addReview(turn: number | undefined): void {
        if (turn === undefined) {
            return;
        }
        const files = this.state.entries.filter((e) => e.role === 'file' && e.turn === turn).length;
        if (files && !this.state.entries.some((e) => e.role === 'review' && e.turn === turn)) {
            this.state.entries.push({ role: 'review', turn, files });
        }
    }

    private closeStreaming(): void {
        const open = this.streaming();
        if (open) {
            open.streaming = false;
        }
    }

    /** The turn's response: the authoritative session cost. */
    applyResult(result: SendResult): void {
        this.closeStreaming();
        this.state.running = false;
        this.state.cost = result.totalCost;
        this.state.costKnown = true;
    }

    /**
     * A transcript rebuilt from `session/history` (OpenAI chat messages) and, when
     * given, `session/checkpoints`: each checkpoint's files are shown after its
     * prompt's turn ("created" when the turn's write_file created it, else
     * "modified"), as the live chat showed them.
     */
    static fromHistory(
        sessionId: string,
        messages: readonly ChatMessage[],
        checkpoints: readonly CheckpointInfo[] = [],
    ): Transcript {
        const t = new Transcript(sessionId);
        t.state.costKnown = false;
        const calls = new Map<string, Extract<Entry, { role: 'tool' }>>();
        // checkpoints pair with the user prompts, in order; a compaction may have
        // taken the first prompts away, so a checkpoint is matched on its text
        const pending = [...checkpoints].sort((a, b) => a.seq - b.seq);
        let turnFiles: CheckpointInfo | undefined;
        let turnStart = 0;
        const endTurn = () => {
            if (!turnFiles) {
                return;
            }
            const created = new Set<string>();
            for (const e of t.state.entries.slice(turnStart)) {
                if (e.role === 'tool' && e.name === 'write_file' && !e.isError && e.output?.startsWith('Created ')) {
                    created.add(String(e.arguments.path ?? ''));
                }
            }
            for (const file of turnFiles.files) {
                t.state.entries.push({ role: 'file', path: file, change: created.has(file) ? 'created' : 'modified', turn: turnFiles.seq });
            }
            t.addReview(turnFiles.seq);
            turnFiles = undefined;
        };
        for (const message of messages) {
            const content = typeof message.content === 'string' ? message.content : '';
            if (message.role === 'user' && content.startsWith(SUMMARY_PREFIX)) {
                t.info(content); // a compaction's summary stands in for older messages
            } else if (message.role === 'user') {
                endTurn();
                const at = pending.findIndex((c) => c.prompt === content || (c.prompt !== '' && content.startsWith(c.prompt)));
                if (at >= 0) {
                    turnFiles = pending[at];
                    pending.splice(0, at + 1);
                }
                const prompt = splitContext(content);
                t.state.entries.push({ role: 'user', text: prompt.text, ...withChips(prompt.context) });
                turnStart = t.state.entries.length;
            } else if (message.role === 'assistant') {
                if (content) {
                    t.state.entries.push({ role: 'assistant', text: content, streaming: false });
                }
                for (const call of message.tool_calls ?? []) {
                    let args: Record<string, unknown> = {};
                    try {
                        const parsed: unknown = JSON.parse(call.function.arguments);
                        if (parsed && typeof parsed === 'object') {
                            args = parsed as Record<string, unknown>;
                        }
                    } catch {
                        args = { raw: call.function.arguments };
                    }
                    const entry: Extract<Entry, { role: 'tool' }> = {
                        role: 'tool',
                        callId: call.id,
                        name: call.function.name,
                        arguments: args,
                    };
                    calls.set(call.id, entry);
                    t.state.entries.push(entry);
                }
            } else if (message.role === 'tool') {
                const entry = calls.get(String(message.tool_call_id ?? ''));
                if (entry) {
                    entry.output = content;
                    entry.isError = isErrorResult(entry.name, content);
                }
            }
        }
        endTurn();
        return t;
    }
}

/** A one-line summary of a tool call, for lists and titles. */
export function describeCall(name: string, args: Record<string, unknown>): string {
    const path = typeof args.path === 'string' ? args.path : undefined;
    const command = typeof args.command === 'string' ? args.command : undefined;
    const pattern = typeof args.pattern === 'string' ? args.pattern : undefined;
    const subject = path ?? command ?? pattern;
    return subject === undefined ? name : `${name} ${subject}`;
}

/** `$0.0123`, or `$—` when unknown (null from the server, undefined: not reported yet). */
export function formatCost(usd: number | null | undefined): string {
    if (usd === undefined || usd === null || !Number.isFinite(usd)) {
        return '$—';
    }
    return `$${usd.toFixed(usd >= 1 ? 2 : 4)}`;
}

function withChips(context: ContextChip[] | undefined): { context?: ContextChip[] } {
    return context ? { context } : {};
}

/** Markdown of a transcript (the Show History document). */
export function toMarkdown(title: string, entries: readonly Entry[]): string {
    const out: string[] = [`# ${title}`, ''];
    for (const e of entries) {
        switch (e.role) {
            case 'user':
                out.push('## You', '', e.text, '');
                if (e.context?.length) {
                    out.push(`*context: ${e.context.map((c) => c.label).join(', ')}*`, '');
                }
                break;
            case 'assistant':
                out.push('## Agent', '', e.text, '');
                break;
            case 'tool': {
                out.push(`**Tool** \`${describeCall(e.name, e.arguments)}\`${e.isError ? ' (error)' : ''}`, '');
                if (e.output !== undefined) {
                    out.push(fence(e.output), '');
                }
                break;
            }
            case 'file':
                out.push(`*${e.change}: ${e.path}${e.status ? ` (${e.status})` : ''}*`, '');
                break;
            case 'info':
                out.push(`> ${e.text.replace(/\n/g, '\n> ')}`, '');
                break;
        }
    }
    return out.join('\n');
}

function fence(text: string): string {
    let ticks = '```';
    while (text.includes(ticks)) {
        ticks += '`';
    }
    return `${ticks}\n${text}\n${ticks}`;
}
