/**
 * The server's lifecycle: one `agent-host serve` through vscode-languageclient,
 * started on first use, stopped on restart and dispose.
 */

import * as fs from 'node:fs';
import * as vscode from 'vscode';
import {
    CloseAction,
    ErrorAction,
    LanguageClient,
    State,
    type LanguageClientOptions,
    type ServerOptions,
} from 'vscode-languageclient/node';
import { AgentApi, type RpcEndpoint } from '../protocol/api';
import type { ApplyWorkspaceEditParams } from '../protocol/edits';
import { PROTOCOL_VERSION, type SessionEvent } from '../protocol/types';
import { initializationOptions, resolveServerCommand, which } from '../protocol/server';
import { classifyStartFailure, type StartEvidence, type StartFailure } from '../protocol/startFailure';
import { applyAgentEdit } from './agentEdits';
import { errorText } from './errors';
import type { PermissionPrompter } from './permission';
import type { NotificationProgress } from './progress';

export interface ServerHooks {
    readonly output: vscode.OutputChannel;
    readonly prompter: PermissionPrompter;
    readonly progress: NotificationProgress;
    log(line: string): void;
    onEvent(event: SessionEvent): void;
    /** The client's state changed (see `AgentServer.state`). */
    onStateChange(): void;
}

/**
 * The language client, quiet where this extension speaks for itself: a start that
 * fails is reported once, by AgentServer, naming its cause (StartFailure), not by
 * the client's own toasts; a server that exits with code 0 after a stop this
 * extension asked for is logged as such, not as an error.
 */
class AgentClient extends LanguageClient {
    /** Set when AgentServer stops this client on purpose. */
    stopRequested = false;

    constructor(
        id: string,
        name: string,
        serverOptions: ServerOptions,
        clientOptions: LanguageClientOptions,
        /** The server process's exit, as the client reports it. */
        private readonly onExit: (code: number | null, signal: string | null) => void,
    ) {
        super(id, name, serverOptions, clientOptions);
    }

    /**
     * After a failed initialize the client stops itself (`void this.stop()`), which
     * rejects when there is nothing running to stop: logged, not left as an
     * unhandled rejection. AgentServer's own stops are logged the same way.
     */
    override stop(timeout?: number): Promise<void> {
        return super.stop(timeout).catch((err) => this.info(`stop: ${errorText(err)}`, undefined, false));
    }

    override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
        const exit = /^Server process exited with (code (-?\d+)|signal (\w+))/.exec(message);
        if (exit) {
            this.onExit(exit[2] !== undefined ? Number(exit[2]) : null, exit[3] ?? null);
        }
        if (this.stopRequested && /^(Server process exited with (code 0|signal)|Connection to server got closed)\b/.test(message)) {
            this.info(message, data, false);
            return;
        }
        // Never a toast of the client's own ("couldn't create connection", "Server
        // initialization failed.", "connection got disposed"): the extension reports
        // a failed start once, naming its cause, and a request's failure where it
        // was made. The output channel has them all.
        super.error(message, data, false);
    }
}

export class AgentServer {
    private client: AgentClient | undefined;
    private api: AgentApi | undefined;
    private starting: Promise<AgentApi> | undefined;
    /** What belongs to the running client, disposed with it. */
    private clientDisposables: vscode.Disposable[] = [];
    /** As the chat view shows it: '' when running. */
    state = 'not started';
    /** The models the running server lists (initialize: its provider table's examples). */
    models: readonly string[] = [];

    constructor(private readonly hooks: ServerHooks) {}

    /** Whether a client exists (running, starting or failed-to-stop). */
    get hasClient(): boolean {
        return this.client !== undefined;
    }

    /** The API of a running server, started on first use. */
    ensureStarted(): Promise<AgentApi> {
        if (this.api && this.client?.isRunning()) {
            return Promise.resolve(this.api);
        }
        if (!this.starting) {
            this.starting = this.start().finally(() => {
                this.starting = undefined;
            });
        }
        return this.starting;
    }

    private async start(): Promise<AgentApi> {
        const folder = vscode.workspace.workspaceFolders?.[0];
        if (!folder || folder.uri.scheme !== 'file') {
            throw new Error('Open a folder first: the agent works on the files of the first workspace folder.');
        }
        if (this.client) {
            await this.stop();
        }
        const config = vscode.workspace.getConfiguration('agentHost');
        const server = resolveServerCommand({ serverPath: config.get<string>('serverPath') });
        this.hooks.log(`starting ${server.command} ${server.args.join(' ')} in ${folder.uri.fsPath}`);
        const missing = missingExecutable(server.command);
        if (missing) {
            throw this.failed(classifyStartFailure({ command: server, spawnError: missing }));
        }
        const evidence: StartEvidence = { command: server, stderr: '' };
        const serverOptions: ServerOptions = {
            command: server.command,
            args: server.args,
            // no `transport`: TransportKind.stdio would append --stdio to the arguments,
            // which `agent-host serve` does not take; stdio is the default all the same
            options: { cwd: folder.uri.fsPath, env: { ...process.env } },
        };
        const clientOptions: LanguageClientOptions = {
            // every file buffer: the agent reads what the editor shows, and its writes
            // (and restores) reach open buffers through workspace/applyEdit
            documentSelector: [{ scheme: 'file' }],
            initializationOptions: initializationOptions({
                store: config.get<string>('store'),
                model: config.get<string>('model'),
                approval: config.get<string>('approval'),
                sandbox: config.get<string>('sandbox'),
            }),
            // the server's stderr reaches the channel through append: its tail says
            // why a start failed ("No module named agent_host", a traceback)
            outputChannel: stderrTail(this.hooks.output, (text) => {
                evidence.stderr = (evidence.stderr + text).slice(-STDERR_KEEP);
            }),
            // the client's own "initialization failed" toast (the raw error message)
            // is not shown: the failed start is reported once, by this class
            initializationFailedHandler: () => false,
            // No restarts by the client: a deliberate stop is not a crash, and a server
            // that went away is started again (once) by the next command that needs it.
            errorHandler: {
                // as the client's default handler: a few write errors are let pass
                error: (_error, _message, count) => ({
                    action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
                }),
                closed: () =>
                    client.stopRequested
                        ? { action: CloseAction.DoNotRestart, handled: true, message: 'Connection to server got closed (stopped).' }
                        : {
                              action: CloseAction.DoNotRestart,
                              handled: true,
                              message: 'The server exited; the next command starts it again.',
                          },
            },
            middleware: { handleWorkDoneProgress: this.hooks.progress.middleware },
        };
        const client = new AgentClient('agentHost', 'Agent Host', serverOptions, clientOptions, (code, signal) => {
            evidence.exitCode = code;
            evidence.signal = signal;
        });
        this.client = client;
        const endpoint: RpcEndpoint = {
            // a token only when there is one: an `undefined` third argument would make
            // vscode-jsonrpc send the params by position, as an array
            request: (method, params, token) =>
                token === undefined ? client.sendRequest(method, params) : client.sendRequest(method, params, token),
            notify: (method, params) => client.sendNotification(method, params),
            onNotification: (method, handler) => client.onNotification(method, handler),
            onRequest: (method, handler) => client.onRequest(method, handler),
        };
        const api = new AgentApi(endpoint);
        api.onEvent((event) => this.hooks.onEvent(event));
        api.setPermissionHandler((params) => this.hooks.prompter.ask(params));
        this.clientDisposables.push(
            api,
            // replaces the client's own handler (registered first): see agentEdits
            client.onRequest('workspace/applyEdit', (params: ApplyWorkspaceEditParams) => applyAgentEdit(params, this.hooks.log)),
            client.onDidChangeState((e) => {
                this.state = e.newState === State.Running ? '' : e.newState === State.Starting ? 'starting' : 'stopped';
                this.hooks.onStateChange();
            }),
        );
        try {
            await client.start();
        } catch (err) {
            evidence.error = errorText(err);
        }
        // A process that dies at once can make start() resolve all the same (the
        // client forgets its start promise when the connection closes): no
        // initialize answer, not running, is a failed start too.
        if (evidence.error !== undefined || !client.initializeResult || client.state !== State.Running) {
            // the exit (and its code) may be reported just after the connection closed
            await waitUntil(() => evidence.exitCode !== undefined || evidence.signal !== undefined, 3000);
            await this.discard(client);
            throw this.failed(classifyStartFailure(evidence));
        }
        const info = (
            client.initializeResult?.capabilities as {
                experimental?: { agentHost?: { protocolVersion?: number; version?: string; models?: unknown } };
            }
        )?.experimental?.agentHost;
        if (!info || info.protocolVersion !== PROTOCOL_VERSION) {
            // not agent-host, or one this extension cannot talk to: stopped, not used
            client.stopRequested = true;
            await this.discard(client);
            throw this.failed(classifyStartFailure({ ...evidence, info: info ?? null, expectedProtocol: PROTOCOL_VERSION }));
        }
        this.hooks.log(`server ${info.version ?? '?'} running (protocol ${info.protocolVersion})`);
        this.models = Array.isArray(info.models) ? info.models.filter((m): m is string => typeof m === 'string') : [];
        this.api = api;
        return api;
    }

    /** A client that did not start (or is not used): dropped, its process ended. */
    private async discard(client: AgentClient): Promise<void> {
        if (this.client === client) {
            this.client = undefined;
        }
        for (const d of this.clientDisposables.splice(0)) {
            d.dispose();
        }
        await stopQuietly(client, (line) => this.hooks.log(line));
    }

    private failed(failure: StartFailure): StartFailure {
        this.state = 'failed to start';
        this.hooks.log(`the server did not start: ${failure.message}`);
        this.hooks.onStateChange();
        return failure;
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.api = undefined;
        for (const d of this.clientDisposables.splice(0)) {
            d.dispose();
        }
        if (client) {
            client.stopRequested = true;
            await stopQuietly(client, (line) => this.hooks.log(line));
        }
        this.state = 'not started';
    }
}

const STDERR_KEEP = 8 * 1024;

/**
 * Stops `client` whatever its state: the client refuses to stop one that is not
 * running ("Client is not running and can't be stopped. It's current state is:
 * startFailed"), which is no failure here; its process is ended all the same.
 */
async function stopQuietly(client: AgentClient, log: (line: string) => void): Promise<void> {
    client.stopRequested = true;
    try {
        if (client.state === State.Running) {
            await client.stop(5000);
        }
    } catch (err) {
        log(`stopping the server: ${errorText(err)}`);
    }
    try {
        await client.dispose(2000);
    } catch {
        // not running: nothing to stop
    }
}

/** `command` as spawn would not find it: ENOENT, or EACCES when it is there but not executable. */
function missingExecutable(command: string): 'ENOENT' | 'EACCES' | undefined {
    if (which(command) !== undefined) {
        return undefined;
    }
    return /[\\/]/.test(command) && fs.existsSync(command) ? 'EACCES' : 'ENOENT';
}

/** The channel, with what is `append`ed (the server's stderr) also given to `onStderr`. */
function stderrTail(output: vscode.OutputChannel, onStderr: (text: string) => void): vscode.OutputChannel {
    return new Proxy(output, {
        get(target, prop, receiver) {
            if (prop === 'append') {
                return (value: string) => {
                    onStderr(value);
                    target.append(value);
                };
            }
            const value = Reflect.get(target, prop, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
        },
    });
}

async function waitUntil(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done() && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
    }
}
