/**
 * A server that did not start, shown once: the cause in one sentence and what
 * fixes it: Set Server Path (an input box, checked as it is typed, written to the
 * User settings), Install (the pip command, run in a terminal), Show Log.
 */

import * as vscode from 'vscode';
import { expandHome, which } from '../protocol/server';
import type { StartFailure } from '../protocol/startFailure';

export const SET_SERVER_PATH = 'Set Server Path';
export const INSTALL = 'Install';
export const SHOW_LOG = 'Show Log';

export interface StartFailureActions {
    output: vscode.OutputChannel;
    /** Starts the server again (after a new path). */
    retry(): Promise<unknown>;
    log(line: string): void;
}

export async function showStartFailure(failure: StartFailure, actions: StartFailureActions): Promise<void> {
    const choice = await vscode.window.showErrorMessage(
        `Agent Host: ${failure.message} Set agentHost.serverPath to agent-host (or to a Python that has it), or install it: ${failure.installCommand}`,
        SET_SERVER_PATH,
        INSTALL,
        SHOW_LOG,
    );
    if (choice === SET_SERVER_PATH) {
        await setServerPath(actions);
    } else if (choice === INSTALL) {
        const terminal = vscode.window.createTerminal({ name: 'Install agent-host' });
        terminal.show();
        terminal.sendText(failure.installCommand, true);
        actions.log(`install: ran \`${failure.installCommand}\` in a terminal; Restart Server once it is done`);
    } else if (choice === SHOW_LOG) {
        actions.output.show(true);
    }
}

/** Asks for agentHost.serverPath (it must name an executable), sets it, starts the server. */
export async function setServerPath(actions: StartFailureActions): Promise<void> {
    const config = vscode.workspace.getConfiguration('agentHost');
    const value = await vscode.window.showInputBox({
        title: 'Agent Host: Server Path',
        prompt: 'The agent-host executable, or a Python interpreter that has agent-host installed (…/bin/python3)',
        value: config.get<string>('serverPath') ?? '',
        ignoreFocusOut: true,
        validateInput: (text) => {
            const path = expandHome(text.trim());
            if (!path) {
                return undefined; // the default: agent-host on PATH, else python3
            }
            return which(path) === undefined ? `${path} is not an executable (on PATH or as a path)` : undefined;
        },
    });
    if (value === undefined) {
        return;
    }
    await config.update('serverPath', value.trim(), vscode.ConfigurationTarget.Global);
    actions.log(`agentHost.serverPath set to ${value.trim() || '(the default)'} in the User settings`);
    await actions.retry();
    vscode.window.setStatusBarMessage('Agent Host: server started', 3000);
}
