/**
 * The server's lifecycle: one `agent-host serve` through vscode-languageclient,
 * started on first use, stopped on restart and dispose.
 */

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
import { initializationOptions, resolveServerCommand } from '../protocol/server';
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
 * The language client, quieter where this extension speaks for itself: a start
 * that fails is reported once, by AgentServer (not also by the client's own
 * "couldn't create connection" toast), and a server that exits with code 0 after
 * a stop this extension asked for is logged as such, not as an error.
 */
class AgentClient extends LanguageClient {
    /** Set when AgentServer stops this client on purpose. */
    stopRequested = false;

    override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
        if (this.stopRequested && /^(Server process exited with (code 0|signal)|Connection to server got closed)\b/.test(message)) {
            this.info(message, data, false);
            return;
        }
        if (/couldn't create connection to server/.test(message)) {
            super.error(message, data, false);
            return;
        }
        super.error(message, data, showNotification);
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
            outputChannel: this.hooks.output,
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
        const client = new AgentClient('agentHost', 'Agent Host', serverOptions, clientOptions);
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
            this.client = undefined;
            for (const d of this.clientDisposables.splice(0)) {
                d.dispose();
            }
            await client.dispose().catch(() => undefined);
            throw new Error(
                `could not start \`${server.command} ${server.args.join(' ')}\` (${errorText(err)}). ` +
                    'Install agent-host (pip install agent-host) or set agentHost.serverPath; the Agent Host output has the server log.',
            );
        }
        const info = (client.initializeResult?.capabilities as { experimental?: { agentHost?: { protocolVersion?: number; version?: string } } })
            ?.experimental?.agentHost;
        if (info?.protocolVersion !== undefined && info.protocolVersion !== PROTOCOL_VERSION) {
            void vscode.window.showWarningMessage(
                `Agent Host: the server speaks protocol ${info.protocolVersion}; this extension speaks ${PROTOCOL_VERSION}. Update one of them.`,
            );
        }
        this.hooks.log(`server ${info?.version ?? '?'} running (protocol ${info?.protocolVersion ?? '?'})`);
        this.api = api;
        return api;
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
            try {
                await client.stop(5000);
            } catch (err) {
                this.hooks.log(`stopping the server: ${errorText(err)}`);
            }
            await client.dispose();
        }
    }
}
