/**
 * Select Model…: a quick pick of the models the server lists (its provider
 * table's examples), the agentHost.models and agentHost.model settings, and any
 * name typed in; the choice goes with the next prompt (session/send's `model`)
 * and the ones after it, with no restart. Remembered per workspace.
 */

import * as vscode from 'vscode';
import type { UiContext } from './uiContext';

type Item = vscode.QuickPickItem & { model: string | undefined };

/** The models to offer, first seen first, without repeats or blanks. */
export function modelChoices(...lists: (readonly (string | undefined)[] | undefined)[]): string[] {
    const seen = new Set<string>();
    for (const list of lists) {
        for (const m of list ?? []) {
            const name = m?.trim();
            if (name) {
                seen.add(name);
            }
        }
    }
    return [...seen];
}

export async function selectModel(ui: UiContext): Promise<void> {
    const config = vscode.workspace.getConfiguration('agentHost');
    const setting = config.get<string>('model')?.trim() || undefined;
    let listed: readonly string[] = [];
    try {
        await ui.server.ensureStarted();
        listed = ui.server.models;
    } catch (err) {
        // the list without the server's part; the failed start shows on the next prompt
        ui.log(`Select Model: the server's models are unknown (${err instanceof Error ? err.message : String(err)})`);
    }
    const chosen = ui.state.model;
    const current = chosen ?? setting;
    const models = modelChoices([chosen, setting], config.get<string[]>('models'), listed);
    const defaultItem: Item = {
        label: '$(settings) Default',
        description: setting ? `agentHost.model: ${setting}` : "the server's default",
        detail: chosen === undefined ? 'in use' : undefined,
        model: undefined,
    };
    const fixed: Item[] = [
        defaultItem,
        ...models.map((m) => ({ label: m, description: m === current ? 'in use' : undefined, model: m })),
    ];
    const picker = vscode.window.createQuickPick<Item>();
    picker.title = 'Agent Host: Select Model';
    picker.placeholder = 'A model for the next prompts, or type any provider/model name (openai/…, anthropic/…, ollama/…)';
    picker.matchOnDescription = true;
    picker.items = fixed;
    picker.onDidChangeValue((value) => {
        const typed = value.trim();
        picker.items =
            typed && !models.includes(typed)
                ? [{ label: typed, description: 'use this name', model: typed, alwaysShow: true }, ...fixed]
                : fixed;
    });
    const picked = await new Promise<Item | undefined>((resolve) => {
        picker.onDidAccept(() => {
            resolve(picker.selectedItems[0]);
            picker.hide();
        });
        picker.onDidHide(() => resolve(undefined));
        picker.show();
    });
    picker.dispose();
    if (!picked) {
        return;
    }
    await ui.state.setModel(picked.model);
    ui.log(`model for the next prompts: ${picked.model ?? `the default (${setting ?? "the server's"})`}`);
    vscode.window.setStatusBarMessage(`Agent Host: the next prompt uses ${picked.model ?? 'the default model'}`, 4000);
}
