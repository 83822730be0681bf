/**
 * The session commands: New Session, List Sessions (this workspace's or every
 * workspace's; resume, delete), Fork Session… (from a checkpoint, or all of
 * it), Close Session, Show History, and the transcript rebuilt from
 * session/history after a resume, fork or restore.
 */

import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { AgentError, type AgentApi } from '../protocol/api';
import type { CheckpointInfo, SessionSummary } from '../protocol/types';
import { Transcript, toMarkdown } from '../protocol/transcript';
import { WHOLE, pickCheckpoint } from './checkpointPicker';
import { Cancelled, errorText } from './errors';
import { HISTORY_SCHEME, type HistoryContentProvider } from './historyDocument';
import type { UiContext } from './uiContext';

const LIST_PAGE = 50;

export class SessionCommands {
    constructor(
        private readonly ui: UiContext,
        private readonly history: HistoryContentProvider,
    ) {}

    /** The current session, or one the user picks or creates; Cancelled without. */
    async requireSession(): Promise<string> {
        const state = this.ui.state;
        if (state.current) {
            return state.current;
        }
        const choice = await vscode.window.showInformationMessage('Agent Host: no current session.', 'List Sessions', 'New Session');
        if (choice === 'List Sessions') {
            await this.listSessions();
        } else if (choice === 'New Session') {
            await this.newSession();
        }
        if (!state.current) {
            throw new Cancelled();
        }
        return state.current;
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
        const api = await this.ui.server.ensureStarted();
        const created = await api.newSession(title.trim() ? { title: title.trim() } : {});
        this.ui.state.transcripts.set(created.sessionId, new Transcript(created.sessionId));
        if (title.trim()) {
            this.ui.state.titles.set(created.sessionId, title.trim());
        }
        await this.ui.state.setCurrent(created.sessionId);
        await this.ui.chat.reveal();
    }

    /**
     * A quick pick of the stored sessions of the first workspace folder (the one the
     * server works on), as `codex resume` and `claude --resume` list the current
     * project's; its last item switches to the sessions of every workspace (each
     * with its folder) and back. Picking a session resumes it. A session is listed
     * from its first prompt: the current one before it is the top item (picking it
     * goes back to its chat).
     */
    async listSessions(): Promise<void> {
        const { state } = this.ui;
        const api = await this.ui.server.ensureStarted();
        const folder = vscode.workspace.workspaceFolders?.[0];
        if (!folder) {
            throw new Error('Open a folder first: the agent works on the files of the first workspace folder.');
        }
        type Item = vscode.QuickPickItem & { session?: SessionSummary; pending?: boolean; more?: boolean; everyWorkspace?: boolean };
        const picker = vscode.window.createQuickPick<Item>();
        picker.matchOnDescription = true;
        picker.matchOnDetail = true;
        const deleteButton = { iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Delete this session' };
        let everyWorkspace = false;
        let sessions: SessionSummary[] = [];
        let cursor: string | null = null;
        let loaded = false;
        /** Bumped when the list starts over, so that a page of the old list is dropped. */
        let generation = 0;
        /** No prompt in its chat yet: not stored, so listed nowhere. */
        const unprompted = (sessionId: string) => {
            const chat = state.transcripts.get(sessionId);
            return chat !== undefined && !chat.entries.some((e) => e.role === 'user');
        };
        const show = () => {
            picker.title = everyWorkspace ? 'Agent Host: Sessions of every workspace' : `Agent Host: Sessions of ${folder.name}`;
            picker.placeholder =
                !loaded || sessions.length
                    ? 'Pick a session to resume'
                    : everyWorkspace
                      ? 'No stored sessions'
                      : `No sessions of ${folder.name} yet; pick "Sessions of every workspace" for the others`;
            const items: Item[] = [];
            // The current session before its first prompt: not stored yet, so in no
            // listing (issue 23); shown at the top so that the picker still has it,
            // until the listing has it.
            const current = state.current;
            if (current && !sessions.some((s) => s.sessionId === current) && unprompted(current)) {
                items.push({
                    label: `$(arrow-right) ${state.titles.get(current) || 'New session'}`,
                    description: 'new · stored from its first prompt',
                    detail: everyWorkspace ? `${folderText(folder.uri.fsPath)} · ${current}` : current,
                    pending: true,
                });
            }
            items.push(...sessions.map((s) => ({
                label: `${s.sessionId === state.current ? '$(arrow-right) ' : ''}${s.title || '(untitled)'}`,
                description: `${s.turns} turn${s.turns === 1 ? '' : 's'} · ${new Date(s.updatedAt).toLocaleString()}`,
                detail: everyWorkspace ? `${folderText(s.workspace)} · ${s.sessionId}` : s.sessionId,
                session: s,
                buttons: [deleteButton],
            })));
            if (cursor !== null) {
                items.push({ label: '$(ellipsis) Load more…', more: true, alwaysShow: true });
            }
            items.push(
                everyWorkspace
                    ? { label: `$(folder) Sessions of ${folder.name} only`, everyWorkspace: false, alwaysShow: true }
                    : { label: '$(folder-library) Sessions of every workspace', everyWorkspace: true, alwaysShow: true },
            );
            picker.items = items;
        };
        const load = async () => {
            const mine = generation;
            picker.busy = true;
            try {
                const page = await api.list({
                    limit: LIST_PAGE,
                    cursor,
                    ...(everyWorkspace ? {} : { workspace: folder.uri.toString() }),
                });
                if (mine !== generation) {
                    return;
                }
                sessions = sessions.concat(page.sessions);
                cursor = page.nextCursor ?? null;
                loaded = true;
                for (const s of page.sessions) {
                    if (s.title) {
                        state.titles.set(s.sessionId, s.title);
                    }
                }
                show();
            } finally {
                if (mine === generation) {
                    picker.busy = false;
                }
            }
        };
        const startOver = (all: boolean) => {
            everyWorkspace = all;
            generation++;
            sessions = [];
            cursor = null;
            loaded = false;
            show();
            return load();
        };
        const chosen = await new Promise<SessionSummary | undefined>((resolve) => {
            picker.onDidAccept(() => {
                const item = picker.selectedItems[0];
                if (item?.more) {
                    load().catch((err) => this.ui.showError(err));
                    return;
                }
                if (item?.everyWorkspace !== undefined) {
                    startOver(item.everyWorkspace).catch((err) => this.ui.showError(err));
                    return;
                }
                if (item?.pending) {
                    picker.hide(); // already the current one: back to its chat
                    this.ui.chat.reveal().catch((err) => this.ui.showError(err));
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
                    state.transcripts.delete(s.sessionId);
                    if (state.current === s.sessionId) {
                        await state.setCurrent(undefined);
                    }
                    show();
                } catch (err) {
                    this.ui.showError(err);
                }
            });
            picker.onDidHide(() => resolve(undefined));
            show();
            picker.show();
            load().catch((err) => {
                this.ui.showError(err);
                picker.hide();
            });
        });
        picker.dispose();
        if (chosen) {
            await this.resume(chosen.sessionId);
        }
    }

    /** Makes `sessionId` the current session and shows its conversation. */
    private async resume(sessionId: string): Promise<void> {
        const api = await this.ui.server.ensureStarted();
        const where = await api.resume(sessionId);
        await this.reload(sessionId);
        await this.ui.state.setCurrent(sessionId);
        this.ui.log(`resumed ${sessionId}: ${where.turns} turns, head ${where.head}`);
        await this.ui.chat.reveal();
    }

    /**
     * Fork Session…: a new session with the current one's conversation up to just
     * before a checkpoint picked from the restore list (or the whole of it); the
     * fork becomes the current session, the source is left as it is.
     */
    async forkSession(): Promise<void> {
        const { state } = this.ui;
        const sessionId = await this.requireSession();
        const picked = await pickCheckpoint(this.ui, sessionId, {
            title: 'Agent Host: Fork Session…',
            placeHolder: 'Newest first. The fork has the conversation up to just before the picked prompt.',
            whole: { label: '$(list-flat) Whole conversation', detail: 'Fork after the last turn: everything said so far' },
        });
        if (picked === undefined) {
            return;
        }
        const known = state.titles.get(sessionId);
        const title = known ? `fork of ${known}` : undefined;
        const api = await this.ui.server.ensureStarted();
        const fork = await api.fork({
            sessionId,
            ...(picked === WHOLE ? {} : { seq: picked.seq }),
            ...(title ? { title } : {}),
        });
        this.ui.log(`forked ${sessionId} ${picked === WHOLE ? 'whole' : `before #${picked.seq}`} into ${fork.sessionId}`);
        if (title) {
            state.titles.set(fork.sessionId, title);
        }
        await this.resume(fork.sessionId);
        void vscode.window.showInformationMessage(`Agent Host: Forked into ${fork.sessionId}.`);
    }

    /**
     * Close Session: the server stops a turn running in the current session and
     * lets go of it; it stays stored (List Sessions resumes it). The chat then
     * starts afresh: the next prompt starts a new session.
     */
    async closeSession(): Promise<void> {
        const { state } = this.ui;
        const sessionId = state.current;
        if (!sessionId) {
            void vscode.window.showInformationMessage('Agent Host: no current session to close.');
            return;
        }
        const api = await this.ui.server.ensureStarted();
        // A session is stored from its first prompt: one closed before it is gone.
        const stored = state.transcripts.get(sessionId)?.entries.some((e) => e.role === 'user') ?? true;
        await api.close(sessionId);
        this.ui.log(`closed ${sessionId}`);
        if (state.current === sessionId) {
            await state.setCurrent(undefined);
        }
        const kept = stored ? 'it stays stored (List Sessions resumes it)' : 'it had no prompt, so nothing of it was stored';
        void vscode.window.showInformationMessage(
            `Agent Host: closed ${state.titles.get(sessionId) ?? sessionId}; ${kept}. The next prompt starts a new session.`,
        );
    }

    /**
     * The session this workspace had current when the window closed (or reloaded),
     * shown again: its conversation and its title. One that is gone is forgotten.
     */
    async loadRemembered(sessionId: string): Promise<void> {
        const api = await this.ui.server.ensureStarted();
        try {
            await this.reload(sessionId);
        } catch (err) {
            if (err instanceof AgentError && err.codeName === 'SESSION_NOT_FOUND') {
                this.ui.log(`the remembered session ${sessionId} is gone`);
                if (this.ui.state.current === sessionId) {
                    await this.ui.state.setCurrent(undefined);
                }
                return;
            }
            throw err;
        }
        const folder = vscode.workspace.workspaceFolders?.[0];
        const page = await api.list({ limit: LIST_PAGE, ...(folder ? { workspace: folder.uri.toString() } : {}) });
        const title = page.sessions.find((s) => s.sessionId === sessionId)?.title;
        const first = this.ui.state.transcripts.get(sessionId)?.entries.find((e) => e.role === 'user');
        const shown = title || (first?.role === 'user' ? first.text.split('\n')[0].slice(0, 60) : undefined);
        if (shown) {
            this.ui.state.titles.set(sessionId, shown);
        }
        this.ui.log(`loaded the remembered session ${sessionId}`);
        this.ui.render();
    }

    /** The transcript rebuilt from session/history (after a resume, restore or undo). */
    async reload(sessionId: string): Promise<void> {
        const api = await this.ui.server.ensureStarted();
        const [{ messages }, checkpoints] = await Promise.all([api.history({ sessionId }), this.checkpointsOf(api, sessionId)]);
        const old = this.ui.state.transcripts.get(sessionId);
        const fresh = Transcript.fromHistory(sessionId, messages, checkpoints);
        if (old?.state.costKnown) {
            fresh.state.cost = old.state.cost;
            fresh.state.costKnown = true;
        }
        this.ui.state.transcripts.set(sessionId, fresh);
        this.ui.render();
    }

    /** The session's checkpoints (the files each turn changed), or none if the server cannot say. */
    private async checkpointsOf(api: AgentApi, sessionId: string): Promise<CheckpointInfo[]> {
        try {
            return (await api.checkpoints(sessionId)).checkpoints;
        } catch (err) {
            this.ui.log(`checkpoints of ${sessionId}: ${errorText(err)}`);
            return [];
        }
    }

    async showHistory(): Promise<void> {
        const sessionId = await this.requireSession();
        const api = await this.ui.server.ensureStarted();
        const [{ messages }, checkpoints] = await Promise.all([api.history({ sessionId }), this.checkpointsOf(api, sessionId)]);
        const title = this.ui.state.titles.get(sessionId) ?? sessionId;
        const markdown = toMarkdown(`${title} (${sessionId})`, Transcript.fromHistory(sessionId, messages, checkpoints).entries);
        const uri = vscode.Uri.from({ scheme: HISTORY_SCHEME, path: `/${sessionId}.md` });
        this.history.set(uri, markdown);
        const doc = await vscode.workspace.openTextDocument(uri);
        await vscode.window.showTextDocument(doc, { preview: true });
    }
}

/** A session's folder as the list shows it: `~/…` under the home folder. */
function folderText(workspace: string | undefined): string {
    if (!workspace) {
        return 'folder unknown';
    }
    const home = os.homedir();
    return home && (workspace === home || workspace.startsWith(home + path.sep)) ? `~${workspace.slice(home.length)}` : workspace;
}
