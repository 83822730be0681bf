/**
 * Agent Host for VS Code: the entry point. Everything that talks to the server
 * lives in src/protocol (no `vscode` import, tested in plain Node); the UI in
 * src/ui.
 */

import type * as vscode from 'vscode';
import { Controller } from './ui/controller';

let controller: Controller | undefined;

export function activate(context: vscode.ExtensionContext): Controller {
    controller = new Controller(context);
    controller.activate();
    return controller;
}

export async function deactivate(): Promise<void> {
    const c = controller;
    controller = undefined;
    await c?.dispose();
}
