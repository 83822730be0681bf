/**
 * session/requestPermission as a modal choice. For edits, the proposed change is
 * opened first in a diff editor (the file as it is now, buffer included, against
 * what the tool would make of it), from virtual documents served by
 * ProposalContentProvider; the diff tab is closed once answered.
 */

import * as path from 'node:path';
import * as vscode from 'vscode';
import { proposedContent, toolPath } from '../protocol/proposal';
import type { Decision, PermissionParams } from '../protocol/types';

export const PROPOSAL_SCHEME = 'agent-host-proposal';

/** Read-only documents with the two sides of a proposed edit (or a raw diff). */
export class ProposalContentProvider implements vscode.TextDocumentContentProvider {
    private readonly docs = new Map<string, string>();
    private counter = 0;

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.docs.get(uri.toString()) ?? '';
    }

    add(name: string, side: string, text: string): vscode.Uri {
        const id = ++this.counter;
        const uri = vscode.Uri.from({
            scheme: PROPOSAL_SCHEME,
            path: `/${id}/${side}/${name.replace(/^\/+/, '')}`,
        });
        this.docs.set(uri.toString(), text);
        return uri;
    }

    remove(...uris: vscode.Uri[]): void {
        for (const uri of uris) {
            this.docs.delete(uri.toString());
        }
    }
}

interface Choice extends vscode.MessageItem {
    decision: Decision;
}

/** Where a tool's relative path lands: under the first workspace folder. */
export function resolveToolPath(p: string): vscode.Uri | undefined {
    if (path.isAbsolute(p)) {
        return vscode.Uri.file(p);
    }
    const root = vscode.workspace.workspaceFolders?.[0]?.uri;
    return root ? vscode.Uri.joinPath(root, p) : undefined;
}

/** The file's text as the editor has it: its open buffer, else the disk; undefined if absent. */
async function currentText(uri: vscode.Uri): Promise<string | undefined> {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) {
        return open.getText();
    }
    try {
        return new TextDecoder('utf-8').decode(await vscode.workspace.fs.readFile(uri));
    } catch {
        return undefined;
    }
}

function truncate(text: string, maxLines: number): string {
    const lines = text.split('\n');
    return lines.length <= maxLines ? text : [...lines.slice(0, maxLines), `… (${lines.length - maxLines} more lines)`].join('\n');
}

export class PermissionPrompter {
    /** One prompt at a time: modals from two sessions would otherwise stack. */
    private queue: Promise<unknown> = Promise.resolve();

    constructor(
        private readonly proposals: ProposalContentProvider,
        private readonly log: (line: string) => void,
    ) {}

    ask(params: PermissionParams): Promise<Decision> {
        const next = this.queue.then(() => this.askNow(params));
        this.queue = next.catch(() => undefined);
        return next;
    }

    private async askNow(params: PermissionParams): Promise<Decision> {
        const args = params.arguments ?? {};
        const file = toolPath(args);
        const opened: vscode.Uri[] = [];
        try {
            if (params.kind === 'edit') {
                opened.push(...(await this.showProposal(params, file)));
            }
            const decision = await this.modal(params, file);
            this.log(`permission ${params.tool}${file ? ` ${file}` : ''}: ${decision}`);
            return decision;
        } finally {
            await this.closeTabs(opened);
            this.proposals.remove(...opened);
        }
    }

    /** Opens the diff; returns the virtual documents it used. */
    private async showProposal(params: PermissionParams, file: string | undefined): Promise<vscode.Uri[]> {
        const args = params.arguments ?? {};
        const name = file ?? params.tool;
        const target = file ? resolveToolPath(file) : undefined;
        const current = target ? await currentText(target) : undefined;
        // The server's preview when it sent one; our own computation for an older server.
        const after = params.proposed ?? proposedContent(params.tool, args, current);
        try {
            if (after !== undefined) {
                const left = this.proposals.add(name, 'current', current ?? '');
                const right = this.proposals.add(name, 'proposed', after);
                const what = params.tool === 'delete_file' ? 'delete' : current === undefined ? 'create' : 'edit';
                await vscode.commands.executeCommand(
                    'vscode.diff',
                    left,
                    right,
                    `${path.basename(name)}: proposed ${what} (Agent Host)`,
                    { preview: true, preserveFocus: true },
                );
                return [left, right];
            }
            if (params.diff) {
                const doc = this.proposals.add(`${name}.diff`, 'diff', params.diff);
                await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
                return [doc];
            }
        } catch (err) {
            this.log(`could not show the proposed change: ${String(err)}`);
        }
        return [];
    }

    private async modal(params: PermissionParams, file: string | undefined): Promise<Decision> {
        const args = params.arguments ?? {};
        let message: string;
        let detail: string;
        if (params.sandboxDenial) {
            // The sandbox stopped this command: the question is whether to run it unconfined.
            const command = typeof args.command === 'string' ? args.command : JSON.stringify(args);
            message = 'The sandbox stopped a command. Run it again WITHOUT the sandbox?';
            detail = `${command}\n\nThe sandbox stopped it: ${params.sandboxDenial}`;
        } else if (params.kind === 'command') {
            const command = typeof args.command === 'string' ? args.command : JSON.stringify(args);
            message = `Agent Host wants to run a command (${params.tool})`;
            detail = command;
        } else if (params.kind === 'external') {
            const [, server, tool] = params.tool.split('__');
            message = `Agent Host wants to use ${tool ?? params.tool} of MCP server ${server ?? '?'}`;
            detail = JSON.stringify(args, null, 2);
        } else {
            const verb = params.tool === 'delete_file' ? 'delete' : params.tool === 'write_file' ? 'write' : 'edit';
            message = `Agent Host wants to ${verb} ${file ?? 'a file'} (${params.tool})`;
            detail = params.diff ? truncate(params.diff, 40) : JSON.stringify(args, null, 2);
        }
        const offered = params.options && params.options.length ? params.options : (['allow_once', 'reject_once'] as Decision[]);
        const what = params.sandboxDenial ? 'this command without the sandbox' : params.tool;
        const labels: Record<Decision, string> = {
            allow_once: 'Allow',
            allow_always: `Always Allow ${what}`,
            reject_once: 'Reject',
            reject_always: `Always Reject ${what}`,
        };
        const items: Choice[] = offered.map((decision) => ({ title: labels[decision], decision }));
        const picked = await vscode.window.showWarningMessage(message, { modal: true, detail }, ...items);
        // Escape / Cancel: reject this call, the turn goes on
        return picked?.decision ?? 'reject_once';
    }

    private async closeTabs(uris: vscode.Uri[]): Promise<void> {
        if (!uris.length) {
            return;
        }
        const wanted = new Set(uris.map((u) => u.toString()));
        const tabs: vscode.Tab[] = [];
        for (const group of vscode.window.tabGroups.all) {
            for (const tab of group.tabs) {
                const input = tab.input;
                if (
                    (input instanceof vscode.TabInputTextDiff && wanted.has(input.modified.toString())) ||
                    (input instanceof vscode.TabInputText && wanted.has(input.uri.toString()))
                ) {
                    tabs.push(tab);
                }
            }
        }
        if (tabs.length) {
            try {
                await vscode.window.tabGroups.close(tabs, true);
            } catch {
                // already closed by the user
            }
        }
    }
}
