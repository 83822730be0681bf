/** Shared by the tests: a real `python -m agent_host serve` in a temp workspace. */

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startHeadless, type HeadlessClient } from '../src/protocol/server';
import type { Approval, SessionEvent } from '../src/protocol/types';

/** The interpreter agent-host is installed in: AGENT_HOST_PYTHON (the pytest
 * wrapper sets it to sys.executable), else python3. */
export const PYTHON = process.env.AGENT_HOST_PYTHON || 'python3';

export interface ScriptStep {
    text?: string;
    tool_calls?: { name: string; arguments: Record<string, unknown> }[];
    delay_ms?: number;
    usage?: { input_tokens: number; output_tokens: number };
    stop_reason?: string;
}

export interface Fixture {
    dir: string;
    root: string;
    store: string;
    script: string;
    client: HeadlessClient;
    events: SessionEvent[];
    file(name: string): string;
    read(name: string): string | undefined;
    uri(name: string): string;
    close(): Promise<void>;
}

export interface FixtureOptions {
    steps: ScriptStep[];
    approval?: Approval;
    applyEdit?: boolean;
    workDoneProgress?: boolean;
    files?: Record<string, string>;
    /** Default: a file store in the temp folder. */
    store?: string;
}

/** A workspace with `files`, a scripted model playing `steps`, and a server on it. */
export async function serve(options: FixtureOptions): Promise<Fixture> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-host-vscode-'));
    const root = path.join(dir, 'project');
    const store = path.join(dir, 'store');
    const script = path.join(dir, 'script.json');
    fs.mkdirSync(root);
    for (const [name, text] of Object.entries(options.files ?? {})) {
        fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
        fs.writeFileSync(path.join(root, name), text);
    }
    fs.writeFileSync(script, JSON.stringify({ steps: options.steps }));
    const client = await startHeadless({
        command: { command: PYTHON, args: ['-m', 'agent_host', 'serve'] },
        root,
        initializationOptions: { store: options.store ?? store, model: `scripted:${script}`, approval: options.approval ?? 'auto' },
        applyEdit: options.applyEdit,
        workDoneProgress: options.workDoneProgress,
        clientName: 'agent-host-vscode-tests',
    });
    const events: SessionEvent[] = [];
    client.api.onEvent((e) => events.push(e));
    const file = (name: string) => path.join(root, name);
    return {
        dir,
        root,
        store,
        script,
        client,
        events,
        file,
        read: (name) => (fs.existsSync(file(name)) ? fs.readFileSync(file(name), 'utf8') : undefined),
        uri: (name) => pathToFileURL(file(name)).href,
        close: async () => {
            const code = await client.shutdown();
            fs.rmSync(dir, { recursive: true, force: true });
            if (code !== 0) {
                throw new Error(`server exited with ${code}:\n${client.stderr()}`);
            }
        },
    };
}

/** Waits until `check` returns a value other than undefined/false. */
export async function waitFor<T>(check: () => T | undefined | false, what: string, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const value = check();
        if (value !== undefined && value !== false) {
            return value;
        }
        if (Date.now() > deadline) {
            throw new Error(`timed out waiting for ${what}`);
        }
        await new Promise((r) => setTimeout(r, 10));
    }
}
