/**
 * Finding and starting `agent-host serve`, and a headless client over its stdio
 * (vscode-jsonrpc directly): what the tests drive, and what a script can use.
 *
 * No `vscode` import here.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
    createMessageConnection,
    StreamMessageReader,
    StreamMessageWriter,
    type MessageConnection,
} from 'vscode-jsonrpc/node';
import { AgentApi, type Disposable, type RpcEndpoint } from './api';
import { MemoryEditor } from './edits';
import type { InitializationOptions } from './types';

export const DEFAULT_SERVER_PATH = 'agent-host';

export interface ServerCommand {
    command: string;
    args: string[];
}

export interface ResolveOptions {
    /** The `agentHost.serverPath` setting: an agent-host executable, or a Python
     * interpreter (then `-m agent_host serve`). Empty: the default. */
    serverPath?: string;
    /** PATH to search (default process.env.PATH). */
    envPath?: string;
    platform?: NodeJS.Platform;
    /** For tests: whether a file is an executable. */
    isExecutable?: (file: string) => boolean;
}

/** A leading `~` or `~/` (`~\\` on Windows) as the home folder, as a shell would
 * expand it: VS Code passes settings as they are, and spawn takes `~` literally. */
export function expandHome(value: string, home: string = os.homedir()): string {
    if (!home) {
        return value;
    }
    if (value === '~') {
        return home;
    }
    if (value.startsWith('~/') || value.startsWith('~\\')) {
        return path.join(home, value.slice(2));
    }
    return value;
}

const PYTHON_NAME = /^python(\d+(\.\d+)*)?(\.exe)?$/i;

function defaultIsExecutable(file: string): boolean {
    try {
        const stat = fs.statSync(file);
        if (!stat.isFile()) {
            return false;
        }
        if (process.platform === 'win32') {
            return true;
        }
        fs.accessSync(file, fs.constants.X_OK);
        return true;
    } catch {
        return false;
    }
}

/** `name` found on `envPath`, or undefined. Names with a slash are taken as they are. */
export function which(name: string, options: ResolveOptions = {}): string | undefined {
    const platform = options.platform ?? process.platform;
    const isExecutable = options.isExecutable ?? defaultIsExecutable;
    const p = platform === 'win32' ? path.win32 : path.posix;
    if (name.includes('/') || (platform === 'win32' && name.includes('\\'))) {
        return isExecutable(name) ? name : undefined;
    }
    const envPath = options.envPath ?? process.env.PATH ?? '';
    const extensions = platform === 'win32' ? ['', '.exe', '.cmd', '.bat'] : [''];
    for (const dir of envPath.split(platform === 'win32' ? ';' : ':')) {
        if (!dir) {
            continue;
        }
        for (const ext of extensions) {
            const candidate = p.join(dir, name + ext);
            if (isExecutable(candidate)) {
                return candidate;
            }
        }
    }
    return undefined;
}

/**
 * The command that starts the server:
 * - a serverPath that names a Python interpreter: `PYTHON -m agent_host serve`;
 * - any other serverPath: `SERVERPATH serve`; the default `agent-host` when it is
 *   on PATH;
 * - else `python3 -m agent_host serve` (`python` on Windows).
 */
export function resolveServerCommand(options: ResolveOptions = {}): ServerCommand {
    const platform = options.platform ?? process.platform;
    const serverPath = expandHome((options.serverPath ?? '').trim()) || DEFAULT_SERVER_PATH;
    const base = (platform === 'win32' ? path.win32 : path.posix).basename(serverPath);
    if (PYTHON_NAME.test(base)) {
        return { command: serverPath, args: ['-m', 'agent_host', 'serve'] };
    }
    if (serverPath !== DEFAULT_SERVER_PATH) {
        return { command: serverPath, args: ['serve'] };
    }
    const found = which(DEFAULT_SERVER_PATH, options);
    if (found !== undefined) {
        return { command: found, args: ['serve'] };
    }
    const python = platform === 'win32' ? 'python' : 'python3';
    return { command: python, args: ['-m', 'agent_host', 'serve'] };
}

/** initializationOptions from settings: empty strings are left out (server defaults). */
export function initializationOptions(settings: {
    store?: string;
    model?: string;
    approval?: string;
    sandbox?: string;
}): InitializationOptions {
    const options: InitializationOptions = {};
    if (settings.store && settings.store.trim()) {
        options.store = expandHome(settings.store.trim());
    }
    if (settings.model && settings.model.trim()) {
        options.model = settings.model.trim();
    }
    if (settings.approval && ['ask', 'auto-edit', 'auto', 'read-only'].includes(settings.approval)) {
        options.approval = settings.approval as InitializationOptions['approval'];
    }
    if (settings.sandbox && ['workspace-write', 'read-only', 'full'].includes(settings.sandbox)) {
        options.sandbox = settings.sandbox;
    }
    return options;
}

/** A MessageConnection as an RpcEndpoint. */
export function endpointOf(connection: MessageConnection): RpcEndpoint {
    return {
        request: (method, params, token) =>
            token === undefined ? connection.sendRequest(method, params) : connection.sendRequest(method, params, token),
        notify: (method, params) => connection.sendNotification(method, params),
        onNotification: (method, handler) => connection.onNotification(method, handler),
        onRequest: (method, handler) => connection.onRequest(method, handler),
    };
}

export interface StartOptions {
    command: ServerCommand;
    /** The workspace folder (rootUri and workspaceFolders). */
    root: string;
    initializationOptions?: InitializationOptions;
    /** Advertise workspace.applyEdit and answer it with a MemoryEditor. */
    applyEdit?: boolean;
    /** Advertise window.workDoneProgress and record $/progress. */
    workDoneProgress?: boolean;
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    clientName?: string;
}

export interface ProgressRecord {
    token: string | number;
    value: { kind: 'begin' | 'report' | 'end'; title?: string; message?: string; cancellable?: boolean };
}

/** A running server and a headless client connected to it. */
export interface HeadlessClient extends Disposable {
    process: ChildProcess;
    connection: MessageConnection;
    endpoint: RpcEndpoint;
    api: AgentApi;
    /** Set when applyEdit was asked for. */
    editor: MemoryEditor | undefined;
    initializeResult: InitializeResult;
    /** window/showMessage notifications received. */
    messages: { type: number; message: string }[];
    /** $/progress notifications received, in order. */
    progress: ProgressRecord[];
    /** The last lines of the server's stderr. */
    stderr(): string;
    /** shutdown, exit, and wait for the process (killed after `timeoutMs`). */
    shutdown(timeoutMs?: number): Promise<number | null>;
}

export interface InitializeResult {
    capabilities: {
        experimental?: {
            agentHost?: {
                protocolVersion: number;
                version: string;
                methods: string[];
                notifications: string[];
                clientRequests: string[];
            };
        };
        [key: string]: unknown;
    };
    serverInfo?: { name: string; version?: string };
}

const STDERR_KEEP = 64 * 1024;

/** Starts the server, connects over its stdio, and runs initialize/initialized. */
export async function startHeadless(options: StartOptions): Promise<HeadlessClient> {
    const child = spawn(options.command.command, options.command.args, {
        cwd: options.cwd ?? options.root,
        env: options.env ?? process.env,
        stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
        stderr = (stderr + chunk).slice(-STDERR_KEEP);
    });
    const exited = new Promise<number | null>((resolve) => {
        child.on('exit', (code) => resolve(code));
        child.on('error', () => resolve(null));
    });
    const spawnError = new Promise<never>((_, reject) => {
        child.on('error', (err) => reject(new Error(`cannot start ${options.command.command}: ${err.message}`)));
    });
    spawnError.catch(() => undefined);

    const connection = createMessageConnection(
        new StreamMessageReader(child.stdout!),
        new StreamMessageWriter(child.stdin!),
    );
    const endpoint = endpointOf(connection);
    const messages: { type: number; message: string }[] = [];
    const progress: ProgressRecord[] = [];
    connection.onNotification('window/showMessage', (params: { type: number; message: string }) => {
        messages.push(params);
    });
    connection.onNotification('window/logMessage', () => undefined);
    if (options.workDoneProgress) {
        connection.onRequest('window/workDoneProgress/create', () => null);
        connection.onNotification('$/progress', (params: ProgressRecord) => {
            progress.push(params);
        });
    }
    const api = new AgentApi(endpoint);
    const editor = options.applyEdit ? new MemoryEditor(endpoint) : undefined;
    connection.listen();

    const rootUri = pathToFileURL(options.root).href;
    const initialize = connection.sendRequest<InitializeResult>('initialize', {
        processId: process.pid,
        clientInfo: { name: options.clientName ?? 'agent-host-headless', version: '0.1.0' },
        rootUri,
        workspaceFolders: [{ uri: rootUri, name: path.basename(options.root) }],
        capabilities: {
            workspace: { applyEdit: Boolean(options.applyEdit) },
            window: { workDoneProgress: Boolean(options.workDoneProgress) },
        },
        initializationOptions: options.initializationOptions ?? {},
    });
    let initializeResult: InitializeResult;
    try {
        initializeResult = await Promise.race([
            initialize,
            spawnError,
            exited.then((code) => {
                throw new Error(`agent-host serve exited (${code}) before initialize answered:\n${stderr}`);
            }),
        ]);
    } catch (err) {
        connection.dispose();
        child.kill();
        throw err;
    }
    await connection.sendNotification('initialized', {});

    let closed = false;
    const shutdown = async (timeoutMs = 10_000): Promise<number | null> => {
        if (!closed) {
            closed = true;
            try {
                await Promise.race([connection.sendRequest('shutdown'), exited, delay(timeoutMs)]);
                await connection.sendNotification('exit');
            } catch {
                // the server is gone already
            }
        }
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs).unref();
        const code = await exited;
        clearTimeout(timer);
        connection.dispose();
        return code;
    };

    return {
        process: child,
        connection,
        endpoint,
        api,
        editor,
        initializeResult,
        messages,
        progress,
        stderr: () => stderr,
        shutdown,
        dispose: () => {
            void shutdown(1000);
        },
    };
}

/** A timer that does not keep the process alive. */
function delay(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
