/**
 * The extension's wiring: the output channel, status bar, chat view and content
 * providers; the commands (registered here, implemented in sessionCommands,
 * turnCommands and checkpointCommands); the server (agentServer) and its restart
 * when the settings change.
 */

import * as vscode from 'vscode';
import { AgentServer } from './agentServer';
import { ChatViewProvider, type ChatMessageFromView } from './chatView';
import { CheckpointCommands } from './checkpointCommands';
import { EditHighlights } from './editHighlights';
import { Cancelled, errorText } from './errors';
import { HISTORY_SCHEME, HistoryContentProvider } from './historyDocument';
import { PermissionPrompter, ProposalContentProvider, PROPOSAL_SCHEME } from './permission';
import { pickMentionedFile } from './mentions';
import { selectModel } from './modelPicker';
import { NotificationProgress } from './progress';
import { ReviewCommands } from './reviewCommands';
import { REVIEW_SCHEME, ReviewDocuments } from './reviewDocuments';
import { StartFailure } from '../protocol/startFailure';
import { SessionCommands } from './sessionCommands';
import { setServerPath, showStartFailure, type StartFailureActions } from './startFailure';
import { SessionState } from './sessionState';
import { StatusView } from './statusView';
import { TurnCommands } from './turnCommands';
import type { UiContext } from './uiContext';

export { HISTORY_SCHEME } from './historyDocument';

export class Controller implements vscode.Disposable, UiContext {
    readonly state: SessionState;
    readonly server: AgentServer;
    readonly chat: ChatViewProvider;
    private readonly output: vscode.OutputChannel;
    private readonly status: vscode.StatusBarItem;
    private readonly view: StatusView;
    private readonly proposals = new ProposalContentProvider();
    private readonly history = new HistoryContentProvider();
    private readonly prompter: PermissionPrompter;
    private readonly progress: NotificationProgress;
    private readonly sessions: SessionCommands;
    private readonly turns: TurnCommands;
    private readonly checkpoints: CheckpointCommands;
    private readonly reviewDocs = new ReviewDocuments();
    private readonly review: ReviewCommands;
    private readonly highlights = new EditHighlights((line) => this.log(line));
    private readonly disposables: vscode.Disposable[] = [];

    constructor(context: vscode.ExtensionContext) {
        this.output = vscode.window.createOutputChannel('Agent Host');
        this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
        this.status.command = 'agentHost.showChat';
        this.chat = new ChatViewProvider((message) => this.fromView(message));
        this.prompter = new PermissionPrompter(this.proposals, (line) => this.log(line));
        this.progress = new NotificationProgress(
            (token) => this.state.tieProgress(token),
            (token) => this.state.cancelProgress(token),
        );
        this.state = new SessionState(
            context.workspaceState,
            () => this.render(),
            (line) => this.log(line),
        );
        this.server = new AgentServer({
            output: this.output,
            prompter: this.prompter,
            progress: this.progress,
            log: (line) => this.log(line),
            onEvent: (event) => {
                this.state.onEvent(event);
                this.highlights.onEvent(event);
            },
            onStateChange: () => this.render(),
        });
        this.view = new StatusView(this.state, this.chat, this.status, () => this.server.state);
        this.sessions = new SessionCommands(this, this.history);
        this.turns = new TurnCommands(this, this.sessions);
        this.checkpoints = new CheckpointCommands(this, this.sessions, this.reviewDocs);
        this.review = new ReviewCommands(this, this.sessions, this.reviewDocs);
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
            vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, this.reviewDocs),
            this.highlights,
            command('agentHost.reviewChanges', () => this.review.reviewChanges()),
            command('agentHost.sendPrompt', (prompt?: unknown) => this.sendPrompt(typeof prompt === 'string' ? prompt : undefined)),
            command('agentHost.newSession', () => this.newSession()),
            command('agentHost.listSessions', () => this.listSessions()),
            command('agentHost.showCheckpoints', () => this.showCheckpoints()),
            command('agentHost.restoreCheckpoint', () => this.restoreCheckpoint()),
            command('agentHost.undoRestore', () => this.undoRestore()),
            command('agentHost.compactSession', () => this.compactSession()),
            command('agentHost.cancel', () => this.cancel()),
            command('agentHost.forkSession', () => this.forkSession()),
            command('agentHost.closeSession', () => this.closeSession()),
            command('agentHost.showHistory', () => this.showHistory()),
            command('agentHost.showChat', () => this.chat.reveal()),
            command('agentHost.restartServer', () => this.restart()),
            command('agentHost.setServerPath', () => setServerPath(this.startFailureActions())),
            command('agentHost.selectModel', () => selectModel(this)),
            vscode.workspace.onDidChangeConfiguration((e) => this.configurationChanged(e)),
        );
        this.render();
        const remembered = this.state.current;
        if (remembered && vscode.workspace.workspaceFolders?.length) {
            // after a window reload: the chat shows that session again, not an empty one
            this.sessions.loadRemembered(remembered).catch((err) => this.log(`loading ${remembered}: ${errorText(err)}`));
        }
    }

    async dispose(): Promise<void> {
        for (const d of this.disposables.splice(0)) {
            d.dispose();
        }
        await this.server.stop();
    }

    // -- the commands

    sendPrompt(given?: string): Promise<void> {
        return this.turns.sendPrompt(given);
    }

    newSession(): Promise<void> {
        return this.sessions.newSession();
    }

    listSessions(): Promise<void> {
        return this.sessions.listSessions();
    }

    showCheckpoints(): Promise<void> {
        return this.checkpoints.showCheckpoints();
    }

    restoreCheckpoint(): Promise<void> {
        return this.checkpoints.restoreCheckpoint();
    }

    undoRestore(): Promise<void> {
        return this.checkpoints.undoRestore();
    }

    compactSession(): Promise<void> {
        return this.turns.compactSession();
    }

    cancel(): Promise<void> {
        return this.turns.cancel();
    }

    forkSession(): Promise<void> {
        return this.sessions.forkSession();
    }

    closeSession(): Promise<void> {
        return this.sessions.closeSession();
    }

    showHistory(): Promise<void> {
        return this.sessions.showHistory();
    }

    // -- shared by the command modules (UiContext)

    log(line: string): void {
        this.output.appendLine(`[${new Date().toLocaleTimeString()}] ${line}`);
    }

    render(): void {
        this.view.render();
    }

    showError(err: unknown): void {
        if (err instanceof Cancelled) {
            return;
        }
        const text = errorText(err);
        this.log(`error: ${text}`);
        if (err instanceof StartFailure) {
            showStartFailure(err, this.startFailureActions()).catch((e) => this.showError(e));
            return;
        }
        void vscode.window.showErrorMessage(`Agent Host: ${text}`);
    }

    // -- the server and the chat view

    private startFailureActions(): StartFailureActions {
        return { output: this.output, retry: () => this.server.ensureStarted(), log: (line) => this.log(line) };
    }

    private async restart(): Promise<void> {
        if (this.state.operations.length) {
            const ok = await vscode.window.showWarningMessage(
                'A turn is running. Restarting the server cancels it.',
                { modal: true },
                'Restart',
            );
            if (ok !== 'Restart') {
                return;
            }
        }
        await this.server.stop();
        await this.server.ensureStarted();
        vscode.window.setStatusBarMessage('Agent Host: server restarted', 3000);
    }

    private configurationChanged(e: vscode.ConfigurationChangeEvent): void {
        if (!this.server.hasClient || !['serverPath', 'model', 'store', 'approval', 'sandbox'].some((k) => e.affectsConfiguration(`agentHost.${k}`))) {
            return;
        }
        void vscode.window
            .showInformationMessage('Agent Host settings changed. Restart the server to use them?', 'Restart')
            .then((answer) => (answer === 'Restart' ? this.restart() : undefined))
            .then(undefined, (err) => this.showError(err));
    }

    /** A changed-file line's link (its diff), Keep or Undo. */
    private async fileChoice(message: Extract<ChatMessageFromView, { type: 'file' }>): Promise<void> {
        if (message.action === 'open') {
            await this.review.openFileDiff(message.turn, message.path);
        } else if (message.action === 'keep') {
            this.review.keepFile(message.turn, message.path);
        } else {
            await this.review.undoFile(message.turn, message.path);
        }
    }

    private fromView(message: ChatMessageFromView): void {
        const run = async () => {
            if (message.type === 'send') {
                await this.sendPrompt(message.text);
            } else if (message.type === 'cancel') {
                await this.cancel();
            } else if (message.type === 'command') {
                await vscode.commands.executeCommand(message.command);
            } else if (message.type === 'review') {
                await this.review.reviewTurn(message.turn);
            } else if (message.type === 'file') {
                await this.fileChoice(message);
            } else if (message.type === 'mention') {
                this.chat.insertMention(message.trigger, await pickMentionedFile(message.trigger));
            }
        };
        run().catch((err) => this.showError(err));
    }
}
