/**
 * The extension's state and commands: one `agent-host serve` (through
 * vscode-languageclient), the current session, a transcript per session, the
 * chat view and the status bar.
 */

import * as vscode from 'vscode';
import {
    LanguageClient,
    State,
    type LanguageClientOptions,
    type ServerOptions,
} from 'vscode-languageclient/node';
import { AgentApi, AgentError, type RpcEndpoint } from '../protocol/api';
import { PROTOCOL_VERSION, type CheckpointInfo, type ContextItem, type SessionEvent, type SessionSummary } from '../protocol/types';
import { initializationOptions, resolveServerCommand } from '../protocol/server';
import { Transcript, formatCost, toMarkdown } from '../protocol/transcript';
import { ChatViewProvider, type ChatMessageFromView } from './chatView';
import { PermissionPrompter, ProposalContentProvider, PROPOSAL_SCHEME } from './permission';
import { NotificationProgress } from './progress';

export const HISTORY_SCHEME = 'agent-host-history';
const CURRENT_KEY = 'agentHost.currentSession';
const LIST_PAGE = 50;

/** A request in flight that Cancel can stop. */
interface Operation {
    sessionId: string;
    kind: 'send' | 'compact';
    done: Promise<unknown>;
    cancel: () => void;
    progressToken?: string | number;
}

class HistoryContentProvider implements vscode.TextDocumentContentProvider {
    private readonly docs = new Map<string, string>();
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;

    set(uri: vscode.Uri, text: string): void {
        this.docs.set(uri.toString(), text);
        this.changed.fire(uri);
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.docs.get(uri.toString()) ?? '';
    }
}

export class Controller implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private api: AgentApi | undefined;
    private starting: Promise<AgentApi> | undefined;
    private current: string | undefined;
    private titles = new Map<string, string>();
    private readonly transcripts = new Map<string, Transcript>();
    private readonly operations: Operation[] = [];
    private readonly output: vscode.OutputChannel;
    private readonly status: vscode.StatusBarItem;
    private readonly chat: ChatViewProvider;
    private readonly proposals = new ProposalContentProvider();
    private readonly history = new HistoryContentProvider();
    private readonly prompter: PermissionPrompter;
    private readonly progress: NotificationProgress;
    private readonly disposables: vscode.Disposable[] = [];
    /** What belongs to the running client, disposed with it. */
    private clientDisposables: vscode.Disposable[] = [];
    private serverState = 'not started';
    /** The agentHost.turnRunning context key as last set. */
    private shownRunning: boolean | undefined;

    constructor(private readonly context: vscode.ExtensionContext) {
        this.output = vscode.window.createOutputChannel('Agent Host');
        this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
        this.status.command = 'agentHost.showChat';
        this.chat = new ChatViewProvider((message) => this.fromView(message));
        this.prompter = new PermissionPrompter(this.proposals, (line) => this.log(line));
        this.progress = new NotificationProgress(
            (token) => this.tieProgress(token),
            (token) => this.cancelProgress(token),
        );
        this.current = context.workspaceState.get<string>(CURRENT_KEY);
    }

    /** Registers commands, views and providers; starts nothing yet. */
    activate(): void {
        const command = (id: string, run: (...args: any[]) => unknown) =>
            vscode.commands.registerCommand(id, async (...args: any[]) => {
                try {
                    await run(...args);
                } catch (err) {
                    this.showError(err);
                }
            });
        this.disposables.push(
            this.output,
            this.status,
            this.chat,
            this.progress,
            vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, this.chat),
            vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, this.proposals),
            vscode.workspace.registerTextDocumentContentProvider(HISTORY_SCHEME, this.history),
            command('agentHost.sendPrompt', (prompt?: unknown) => this.sendPrompt(typeof prompt === 'string' ? prompt : undefined)),
            command('agentHost.newSession', () => this.newSession()),
            command('agentHost.listSessions', () => this.listSessions()),
            command('agentHost.showCheckpoints', () => this.showCheckpoints()),
            command('agentHost.restoreCheckpoint', () => this.restoreCheckpoint()),
            command('agentHost.undoRestore', () => this.undoRestore()),
            command('agentHost.compactSession', () => this.compactSession()),
            command('agentHost.cancel', () => this.cancel()),
            command('agentHost.showHistory', () => this.showHistory()),
            command('agentHost.showChat', () => this.chat.reveal()),
            command('agentHost.restartServer', () => this.restart()),
            vscode.workspace.onDidChangeConfiguration((e) => this.configurationChanged(e)),
        );
        this.render();
    }

    async dispose(): Promise<void> {
        for (const d of this.disposables.splice(0)) {
            d.dispose();
        }
        await this.stop();
    }

    // -- the server

    private log(line: string): void {
        this.output.appendLine(`[${new Date().toLocaleTimeString()}] ${line}`);
    }

    /** The API of a running server, started on first use. */
    private ensureStarted(): Promise<AgentApi> {
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
        this.log(`starting ${server.command} ${server.args.join(' ')} in ${folder.uri.fsPath}`);
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
            }),
            outputChannel: this.output,
            middleware: { handleWorkDoneProgress: this.progress.middleware },
        };
        const client = new LanguageClient('agentHost', 'Agent Host', serverOptions, clientOptions);
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
        api.onEvent((event) => this.onEvent(event));
        api.setPermissionHandler((params) => this.prompter.ask(params));
        this.clientDisposables.push(
            api,
            client.onDidChangeState((e) => {
                this.serverState = e.newState === State.Running ? '' : e.newState === State.Starting ? 'starting' : 'stopped';
                this.render();
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
                `Agent Host could not start \`${server.command} ${server.args.join(' ')}\` (${errorText(err)}). ` +
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
        this.log(`server ${info?.version ?? '?'} running (protocol ${info?.protocolVersion ?? '?'})`);
        this.api = api;
        return api;
    }

    private async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.api = undefined;
        for (const d of this.clientDisposables.splice(0)) {
            d.dispose();
        }
        if (client) {
            try {
                await client.stop(5000);
            } catch (err) {
                this.log(`stopping the server: ${errorText(err)}`);
            }
            await client.dispose();
        }
    }

    private async restart(): Promise<void> {
        if (this.operations.length) {
            const ok = await vscode.window.showWarningMessage(
                'A turn is running. Restarting the server cancels it.',
                { modal: true },
                'Restart',
            );
            if (ok !== 'Restart') {
                return;
            }
        }
        await this.stop();
        await this.ensureStarted();
        vscode.window.setStatusBarMessage('Agent Host: server restarted', 3000);
    }

    private configurationChanged(e: vscode.ConfigurationChangeEvent): void {
        if (!this.client || !['serverPath', 'model', 'store', 'approval'].some((k) => e.affectsConfiguration(`agentHost.${k}`))) {
            return;
        }
        void vscode.window
            .showInformationMessage('Agent Host settings changed. Restart the server to use them?', 'Restart')
            .then((answer) => (answer === 'Restart' ? this.restart() : undefined))
            .then(undefined, (err) => this.showError(err));
    }

    // -- sessions and their transcripts

    private transcript(sessionId: string): Transcript {
        let t = this.transcripts.get(sessionId);
        if (!t) {
            t = new Transcript(sessionId);
            this.transcripts.set(sessionId, t);
        }
        return t;
    }

    private async setCurrent(sessionId: string | undefined): Promise<void> {
        this.current = sessionId;
        await this.context.workspaceState.update(CURRENT_KEY, sessionId);
        this.render();
    }

    private onEvent(event: SessionEvent): void {
        const t = this.transcript(event.sessionId);
        if (!t.apply(event)) {
            return;
        }
        if (event.kind === 'tool_call' || event.kind === 'tool_result' || event.kind === 'turn_end' || event.kind === 'file_snapshot') {
            this.log(`${event.sessionId} ${event.kind} ${JSON.stringify(event.data).slice(0, 400)}`);
        }
        if (event.sessionId === this.current) {
            this.render();
        }
    }

    private render(): void {
        const running = this.operations.some((op) => op.sessionId === this.current);
        if (running !== this.shownRunning) {
            this.shownRunning = running;
            void vscode.commands.executeCommand('setContext', 'agentHost.turnRunning', running);
        }
        const t = this.current ? this.transcripts.get(this.current) : undefined;
        const cost = t ? (t.state.costKnown ? formatCost(t.state.cost) : formatCost(undefined)) : formatCost(0);
        const title = this.current ? (this.titles.get(this.current) ?? this.current) : 'No session';
        this.chat.update({
            sessionId: this.current,
            title,
            entries: t ? t.entries : [],
            running: running || Boolean(t?.state.running),
            cost,
            serverState: this.serverState,
        });
        this.status.text = `${running ? '$(sync~spin)' : '$(hubot)'} ${cost}`;
        this.status.tooltip = this.current
            ? `Agent Host session ${this.current}\n${t?.state.inputTokens ?? 0} input / ${t?.state.outputTokens ?? 0} output tokens this window${
                  t && !t.state.costKnown ? '\nCost: known after the next turn of this resumed session' : ''
              }\nClick to open the chat`
            : 'Agent Host: no session yet. Click to open the chat';
        this.status.show();
    }

    private async requireSession(): Promise<string> {
        if (this.current) {
            return this.current;
        }
        const choice = await vscode.window.showInformationMessage('Agent Host: no current session.', 'List Sessions', 'New Session');
        if (choice === 'List Sessions') {
            await this.listSessions();
        } else if (choice === 'New Session') {
            await this.newSession();
        }
        if (!this.current) {
            throw new Cancelled();
        }
        return this.current;
    }

    private fromView(message: ChatMessageFromView): void {
        const run = async () => {
            if (message.type === 'send') {
                await this.sendPrompt(message.text);
            } else if (message.type === 'cancel') {
                await this.cancel();
            } else if (message.type === 'command') {
                await vscode.commands.executeCommand(message.command);
            }
        };
        run().catch((err) => this.showError(err));
    }

    // -- commands

    async sendPrompt(given?: string): Promise<void> {
        const prompt =
            given ??
            (await vscode.window.showInputBox({
                title: 'Agent Host: Send Prompt',
                prompt: this.current ? `To session ${this.titles.get(this.current) ?? this.current}` : 'Starts a new session',
                placeHolder: 'What should the agent do?',
                ignoreFocusOut: true,
            }));
        if (!prompt || !prompt.trim()) {
            return;
        }
        const api = await this.ensureStarted();
        if (!this.current) {
            const created = await api.newSession({});
            this.transcripts.set(created.sessionId, new Transcript(created.sessionId));
            this.titles.set(created.sessionId, prompt.split('\n')[0].slice(0, 60));
            await this.setCurrent(created.sessionId);
        }
        const sessionId = this.current!;
        if (this.operations.some((op) => op.sessionId === sessionId)) {
            void vscode.window.showWarningMessage('Agent Host: a turn is running in this session. Wait for it or cancel it first.');
            return;
        }
        const context = this.selectionContext();
        const transcript = this.transcript(sessionId);
        void this.chat.reveal();
        const turn = api.send({ sessionId, prompt, context });
        const op: Operation = {
            sessionId,
            kind: 'send',
            done: turn,
            cancel: () => void api.cancelTurn(sessionId, turn).catch(() => undefined),
        };
        this.track(op);
        try {
            const result = await turn;
            transcript.applyResult(result);
            this.log(
                `${sessionId} turn ${result.checkpoint}: ${result.stopReason}, ${result.usage.inputTokens}+${result.usage.outputTokens} tokens, ${formatCost(result.cost)} (session ${formatCost(result.totalCost)})`,
            );
            if (!['end_turn', 'cancelled'].includes(result.stopReason)) {
                void vscode.window.showWarningMessage(`Agent Host: the turn ended with ${result.stopReason}.`);
            }
        } catch (err) {
            transcript.info(errorText(err), 'error');
            throw err;
        } finally {
            this.untrack(op);
        }
    }

    private selectionContext(): ContextItem[] {
        if (!vscode.workspace.getConfiguration('agentHost').get<boolean>('sendSelection', true)) {
            return [];
        }
        const editor = vscode.window.activeTextEditor;
        if (!editor || editor.selection.isEmpty) {
            return [];
        }
        return [{ text: editor.document.getText(editor.selection), uri: editor.document.uri.toString() }];
    }

    async newSession(): Promise<void> {
        const title = await vscode.window.showInputBox({
            title: 'Agent Host: New Session',
            prompt: 'A title (optional; default: the first prompt)',
            ignoreFocusOut: true,
        });
        if (title === undefined) {
            return;
        }
        const api = await this.ensureStarted();
        const created = await api.newSession(title.trim() ? { title: title.trim() } : {});
        this.transcripts.set(created.sessionId, new Transcript(created.sessionId));
        if (title.trim()) {
            this.titles.set(created.sessionId, title.trim());
        }
        await this.setCurrent(created.sessionId);
        await this.chat.reveal();
    }

    async listSessions(): Promise<void> {
        const api = await this.ensureStarted();
        type Item = vscode.QuickPickItem & { session?: SessionSummary; more?: boolean };
        const picker = vscode.window.createQuickPick<Item>();
        picker.title = 'Agent Host: Sessions';
        picker.placeholder = 'Pick a session to resume';
        picker.matchOnDescription = true;
        picker.matchOnDetail = true;
        const deleteButton = { iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Delete this session' };
        let sessions: SessionSummary[] = [];
        let cursor: string | null = null;
        const show = () => {
            const items: Item[] = sessions.map((s) => ({
                label: `${s.sessionId === this.current ? '$(arrow-right) ' : ''}${s.title || '(untitled)'}`,
                description: `${s.turns} turn${s.turns === 1 ? '' : 's'} · ${new Date(s.updatedAt).toLocaleString()}`,
                detail: s.sessionId,
                session: s,
                buttons: [deleteButton],
            }));
            if (cursor !== null) {
                items.push({ label: '$(ellipsis) Load more…', more: true, alwaysShow: true });
            }
            picker.items = items;
        };
        const load = async () => {
            picker.busy = true;
            try {
                const page = await api.list({ limit: LIST_PAGE, cursor });
                sessions = sessions.concat(page.sessions);
                cursor = page.nextCursor ?? null;
                for (const s of page.sessions) {
                    if (s.title) {
                        this.titles.set(s.sessionId, s.title);
                    }
                }
                show();
            } finally {
                picker.busy = false;
            }
        };
        const chosen = await new Promise<SessionSummary | undefined>((resolve) => {
            picker.onDidAccept(() => {
                const item = picker.selectedItems[0];
                if (item?.more) {
                    load().catch((err) => this.showError(err));
                    return;
                }
                resolve(item?.session);
                picker.hide();
            });
            picker.onDidTriggerItemButton(async (e) => {
                const s = e.item.session;
                if (!s) {
                    return;
                }
                const ok = await vscode.window.showWarningMessage(
                    `Delete session "${s.title || s.sessionId}"? Its log is removed; this cannot be undone.`,
                    { modal: true },
                    'Delete',
                );
                if (ok !== 'Delete') {
                    return;
                }
                try {
                    await api.deleteSession(s.sessionId);
                    sessions = sessions.filter((x) => x.sessionId !== s.sessionId);
                    this.transcripts.delete(s.sessionId);
                    if (this.current === s.sessionId) {
                        await this.setCurrent(undefined);
                    }
                    show();
                } catch (err) {
                    this.showError(err);
                }
            });
            picker.onDidHide(() => resolve(undefined));
            picker.show();
            load().catch((err) => {
                this.showError(err);
                picker.hide();
            });
        });
        picker.dispose();
        if (chosen) {
            await this.resume(chosen.sessionId);
        }
    }

    private async resume(sessionId: string): Promise<void> {
        const api = await this.ensureStarted();
        const where = await api.resume(sessionId);
        await this.reload(sessionId);
        await this.setCurrent(sessionId);
        this.log(`resumed ${sessionId}: ${where.turns} turns, head ${where.head}`);
        await this.chat.reveal();
    }

    /** The transcript rebuilt from session/history (after a resume, restore or undo). */
    private async reload(sessionId: string): Promise<void> {
        const api = await this.ensureStarted();
        const { messages } = await api.history({ sessionId });
        const old = this.transcripts.get(sessionId);
        const fresh = Transcript.fromHistory(sessionId, messages);
        if (old?.state.costKnown) {
            fresh.state.cost = old.state.cost;
            fresh.state.costKnown = true;
        }
        this.transcripts.set(sessionId, fresh);
        this.render();
    }

    private async pickCheckpoint(sessionId: string, title: string): Promise<CheckpointInfo | undefined> {
        const api = await this.ensureStarted();
        const { checkpoints } = await api.checkpoints(sessionId);
        if (!checkpoints.length) {
            void vscode.window.showInformationMessage('Agent Host: this session has no checkpoints yet (one per prompt).');
            return undefined;
        }
        type Item = vscode.QuickPickItem & { checkpoint: CheckpointInfo };
        const items: Item[] = [...checkpoints].reverse().map((c) => ({
            label: `#${c.seq}  ${c.prompt.split('\n')[0].slice(0, 80)}`,
            description: new Date(c.createdAt).toLocaleString(),
            detail: c.files.length ? `changed: ${c.files.join(', ')}` : 'no files changed',
            checkpoint: c,
        }));
        const picked = await vscode.window.showQuickPick(items, {
            title,
            placeHolder: 'Newest first. Restoring to a checkpoint returns to just before its prompt.',
            matchOnDescription: true,
            matchOnDetail: true,
        });
        return picked?.checkpoint;
    }

    async showCheckpoints(): Promise<void> {
        const sessionId = await this.requireSession();
        const checkpoint = await this.pickCheckpoint(sessionId, 'Agent Host: Checkpoints');
        if (checkpoint) {
            await this.restoreTo(sessionId, checkpoint);
        }
    }

    async restoreCheckpoint(): Promise<void> {
        const sessionId = await this.requireSession();
        const checkpoint = await this.pickCheckpoint(sessionId, 'Agent Host: Restore Checkpoint…');
        if (checkpoint) {
            await this.restoreTo(sessionId, checkpoint);
        }
    }

    private async restoreTo(sessionId: string, checkpoint: CheckpointInfo): Promise<void> {
        type Mode = vscode.QuickPickItem & { files: boolean; conversation: boolean };
        const modes: Mode[] = [
            {
                label: 'Files and conversation',
                detail: 'Put the files back as they were and forget the later turns',
                files: true,
                conversation: true,
            },
            { label: 'Files only', detail: 'Put the files back; keep the conversation', files: true, conversation: false },
            {
                label: 'Conversation only',
                detail: 'Rewind the conversation; leave the files as they are now',
                files: false,
                conversation: true,
            },
        ];
        const mode = await vscode.window.showQuickPick(modes, {
            title: `Restore to #${checkpoint.seq}: ${checkpoint.prompt.split('\n')[0].slice(0, 60)}`,
            placeHolder: 'What to restore (Undo Restore takes it back)',
        });
        if (!mode) {
            return;
        }
        const api = await this.ensureStarted();
        const result = await api.restore({ sessionId, seq: checkpoint.seq, files: mode.files, conversation: mode.conversation });
        this.log(`${sessionId} restored to ${checkpoint.seq}: ${JSON.stringify(result)}`);
        await this.reload(sessionId);
        const files = result.restoredFiles.length ? `${result.restoredFiles.length} file(s): ${result.restoredFiles.join(', ')}` : 'no files';
        this.transcript(sessionId).info(`Restored to #${checkpoint.seq} (${mode.label.toLowerCase()}): ${files}.`);
        this.render();
        this.reportUnreverted(result.unrevertedBuffers);
        const answer = await vscode.window.showInformationMessage(
            `Agent Host: restored ${files}; ${result.removedEvents} event(s) set aside.`,
            'Undo Restore',
        );
        if (answer === 'Undo Restore') {
            await this.undoRestore();
        }
    }

    private reportUnreverted(paths: string[]): void {
        if (paths.length) {
            void vscode.window.showWarningMessage(
                `Agent Host: the open editor(s) of ${paths.join(', ')} could not be brought back; they differ from the files on disk (File: Revert File reloads them).`,
            );
        }
    }

    async undoRestore(): Promise<void> {
        const sessionId = await this.requireSession();
        const api = await this.ensureStarted();
        const result = await api.undoRestore(sessionId);
        this.log(`${sessionId} undo restore: ${JSON.stringify(result)}`);
        await this.reload(sessionId);
        this.transcript(sessionId).info(`Restore undone: ${result.restoredFiles.length} file(s), ${result.restoredEvents} event(s) back.`);
        this.render();
        this.reportUnreverted(result.unrevertedBuffers);
        void vscode.window.showInformationMessage(
            `Agent Host: restore undone (${result.restoredFiles.length} file(s), ${result.restoredEvents} event(s) back).`,
        );
    }

    async compactSession(): Promise<void> {
        const sessionId = await this.requireSession();
        const instructions = await vscode.window.showInputBox({
            title: 'Agent Host: Compact Session',
            prompt: 'What the summary should keep (optional)',
            ignoreFocusOut: true,
        });
        if (instructions === undefined) {
            return;
        }
        const api = await this.ensureStarted();
        const source = new vscode.CancellationTokenSource();
        const done = api.compact({ sessionId, instructions: instructions.trim() || undefined }, source.token);
        const op: Operation = { sessionId, kind: 'compact', done, cancel: () => source.cancel() };
        this.track(op);
        try {
            const result = await done;
            const message =
                result.before === result.after
                    ? 'nothing to compact yet (it needs two prompts)'
                    : `${result.before} → ${result.after} tokens`;
            this.transcript(sessionId).info(`Compacted: ${message}.`);
            this.render();
            void vscode.window.showInformationMessage(`Agent Host: compacted, ${message}.`);
        } catch (err) {
            if (err instanceof AgentError && err.codeName === 'REQUEST_CANCELLED') {
                this.transcript(sessionId).info('Compaction cancelled.', 'warning');
                this.render();
                return;
            }
            throw err;
        } finally {
            this.untrack(op);
            source.dispose();
        }
    }

    async cancel(): Promise<void> {
        const sessionId = this.current;
        const ops = this.operations.filter((op) => op.sessionId === sessionId);
        if (!ops.length) {
            void vscode.window.showInformationMessage('Agent Host: nothing is running in this session.');
            return;
        }
        for (const op of ops) {
            op.cancel();
        }
        vscode.window.setStatusBarMessage('Agent Host: cancelling…', 3000);
    }

    async showHistory(): Promise<void> {
        const sessionId = await this.requireSession();
        const api = await this.ensureStarted();
        const { messages } = await api.history({ sessionId });
        const title = this.titles.get(sessionId) ?? sessionId;
        const markdown = toMarkdown(`${title} (${sessionId})`, Transcript.fromHistory(sessionId, messages).entries);
        const uri = vscode.Uri.from({ scheme: HISTORY_SCHEME, path: `/${sessionId}.md` });
        this.history.set(uri, markdown);
        const doc = await vscode.workspace.openTextDocument(uri);
        await vscode.window.showTextDocument(doc, { preview: true });
    }

    // -- running operations and their progress

    private track(op: Operation): void {
        this.operations.push(op);
        this.render();
    }

    private untrack(op: Operation): void {
        const i = this.operations.indexOf(op);
        if (i >= 0) {
            this.operations.splice(i, 1);
        }
        this.render();
    }

    /** A $/progress began: it belongs to the oldest request without one (the server
     * creates the token as it takes the request, in order). */
    private tieProgress(token: string | number): void {
        const op = this.operations.find((o) => o.progressToken === undefined);
        if (op) {
            op.progressToken = token;
        }
    }

    private cancelProgress(token: string | number): void {
        const op = this.operations.find((o) => o.progressToken === token);
        op?.cancel();
    }

    private showError(err: unknown): void {
        if (err instanceof Cancelled) {
            return;
        }
        const text = errorText(err);
        this.log(`error: ${text}`);
        void vscode.window.showErrorMessage(`Agent Host: ${text}`);
    }
}

class Cancelled extends Error {}

function errorText(err: unknown): string {
    if (err instanceof AgentError) {
        return err.message;
    }
    if (err instanceof Error) {
        return err.message;
    }
    return String(err);
}
